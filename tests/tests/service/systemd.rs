//! The service under a real systemd user manager, run in its own mount namespace.

use super::*;

/// A private `systemd --user`, stopped (SIGTERM: it stops its units) when dropped.
struct UserManager {
    child: Child,
}

impl UserManager {
    /// Starts one on `dirs`' runtime and config dirs; panics saying why if it cannot.
    fn start(dirs: &Dirs) -> UserManager {
        let systemd = ["/lib/systemd/systemd", "/usr/lib/systemd/systemd"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!("no systemd binary: install the `systemd` package (scripts/test does)")
            });
        let mut command = if Path::new("/run/systemd/system").is_dir() {
            let mut command = Command::new(&systemd);
            command.arg("--user");
            command
        } else {
            // Not booted with systemd (a container): the user manager refuses to start unless
            // /run/systemd/system exists. Make it exist in a private mount namespace only.
            let mut command = Command::new("unshare");
            command
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(
                    "set -e; if [ -d /run/systemd ]; then at=/run/systemd; else at=/run; fi; \
                 mount -t tmpfs tmpfs \"$at\"; mkdir -p /run/systemd/system; \
                 exec \"$0\" --user",
                );
            command.arg(&systemd);
            command
        };
        let log = dirs.runtime.parent().unwrap().join("manager.log");
        let log_file = std::fs::File::create(&log).unwrap();
        // Services inherit the manager's environment: give it only what it needs.
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("XDG_RUNTIME_DIR", &dirs.runtime)
            .env("XDG_CONFIG_HOME", &dirs.config)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .process_group(0);
        let mut manager = UserManager {
            child: command.spawn().unwrap_or_else(|e| {
                panic!("cannot start {}: {e}", systemd.display());
            }),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = manager.child.try_wait().unwrap() {
                panic!(
                    "cannot start a systemd user manager here ({status}); it needs systemd, and \
                     where PID 1 is not systemd, root (for a private mount namespace):\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            if manager
                .systemctl(dirs, &["show-environment"])
                .status
                .success()
            {
                return manager;
            }
            assert!(
                Instant::now() < deadline,
                "the systemd user manager did not answer within 20 s:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn systemctl(&self, dirs: &Dirs, args: &[&str]) -> Output {
        Command::new("systemctl")
            .arg("--user")
            .args(args)
            .env("XDG_RUNTIME_DIR", &dirs.runtime)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .output()
            .unwrap()
    }

    /// `systemctl --user show --property=<property> --value <unit>`.
    fn property(&self, dirs: &Dirs, unit: &str, property: &str) -> String {
        let output = self.systemctl(
            dirs,
            &["show", &format!("--property={property}"), "--value", unit],
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn install_runs_the_daemon_under_a_real_systemd_user_manager_until_uninstall() {
    let dirs = Dirs::new(SYSTEMD_AWKWARD);
    let manager = UserManager::start(&dirs);
    let client = Client::new(dirs.home.clone());

    // A daemon started the usual way holds the home first.
    let output = dirs.run(&["daemon", "start"]);
    assert!(output.status.success(), "{:?}", text(&output));
    let detached = client.get::<Health>("/api/health").await.unwrap().pid;

    let output = dirs.run(&["service", "install", "--listen", "127.0.0.1:0"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "stopped lazyboyd (pid {detached}), which ran outside the service"
        )),
        "{stdout}"
    );
    let file = dirs.unit_file();
    let unit = file.file_name().unwrap().to_str().unwrap().to_owned();
    assert_eq!(manager.property(&dirs, &unit, "ActiveState"), "active");
    assert_eq!(manager.property(&dirs, &unit, "UnitFileState"), "enabled");
    assert_eq!(
        manager.property(&dirs, &unit, "FragmentPath"),
        file.to_str().unwrap()
    );

    // The daemon that answers is the unit's, on this (awkwardly named) home.
    let main_pid: u32 = manager.property(&dirs, &unit, "MainPID").parse().unwrap();
    let health = client.get::<Health>("/api/health").await.unwrap();
    assert_eq!(health.pid, main_pid);
    assert_ne!(health.pid, detached);
    assert_eq!(health.home, home_str(&dirs));
    assert!(
        stdout.contains(&format!("running (pid {main_pid})")),
        "{stdout}"
    );

    let status = dirs.run(&["--json", "service", "status"]);
    assert_eq!(status.status.code(), Some(0), "{:?}", text(&status));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["installed"], true);
    assert_eq!(status["service"], unit.as_str());
    assert_eq!(status["manager"], "active, enabled");
    assert_eq!(status["daemon_pid"], main_pid);

    // A crash: systemd starts it again (Restart=on-failure).
    kill(Pid::from_raw(main_pid as i32), Signal::SIGKILL).unwrap();
    let restarted = wait_for(
        Duration::from_secs(20),
        "systemd to restart lazyboyd",
        || {
            let client = client.clone();
            async move {
                let health = client.get::<Health>("/api/health").await.ok()?;
                (health.pid != main_pid).then_some(health)
            }
        },
    )
    .await;
    assert_eq!(
        manager.property(&dirs, &unit, "MainPID"),
        restarted.pid.to_string()
    );
    assert_eq!(manager.property(&dirs, &unit, "NRestarts"), "1");

    // Uninstall stops it, disables it and removes the file; a second one has nothing to do.
    let output = dirs.run(&["service", "uninstall"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(!file.exists());
    assert!(
        !lazyboy::daemon_proc::lock_is_held(&dirs.home),
        "the daemon still runs"
    );
    assert!(client.get::<Health>("/api/health").await.is_err());
    assert_eq!(manager.property(&dirs, &unit, "ActiveState"), "inactive");
    assert!(
        !dirs
            .units()
            .join("default.target.wants")
            .join(&unit)
            .exists(),
        "still enabled"
    );
    let output = dirs.run(&["service", "uninstall"]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    assert!(stdout.contains("is not installed"), "{stdout}");
    drop(manager);
}
