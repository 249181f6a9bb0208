//! `lazyboy service`: the generated files checked by real tools (`systemd-analyze verify`,
//! python3's `plistlib`), the behaviour without a systemd user manager, and install → the
//! daemon answers (and comes back after kill -9) → uninstall under a real systemd user manager.
//!
//! That manager is the test's own: `systemd --user` on a private `XDG_RUNTIME_DIR` and config
//! dir, so the machine's user manager and `~/.config` are never touched. In a container whose
//! PID 1 is not systemd, `systemd --user` refuses to start ("not booted with systemd": no
//! `/run/systemd/system`); it then runs in a private mount namespace where that directory
//! exists (root only). Homes have spaces, `%`, `$` and `\` in their paths, to test escaping.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use lazyboy::connection::Client;
use lazyboy_protocol::{Health, paths};
use lazyboy_tests::{bin, cli, temp_home, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;

mod systemd;

/// A home path that needs escaping in a unit file: space, `%` (`%m` is a specifier), `${e}`
/// (expanded in ExecStart), `\` (C escapes).
const SYSTEMD_AWKWARD: &str = "h o%m${e}\\x";
/// A home path that needs escaping in XML.
const XML_AWKWARD: &str = "a&b <c> \"d\" 'e'";

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Private dirs for one test: the service files' config dir and a runtime dir.
struct Dirs {
    _base: TempDir,
    home: PathBuf,
    config: PathBuf,
    runtime: PathBuf,
}

impl Dirs {
    fn new(home_name: &str) -> Dirs {
        let base = temp_home();
        let runtime = base.path().join("rt");
        std::fs::create_dir(&runtime).unwrap();
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        Dirs {
            home: base.path().join(home_name),
            config: base.path().join("cfg"),
            runtime,
            _base: base,
        }
    }

    /// Where systemd user units go under this config dir.
    fn units(&self) -> PathBuf {
        self.config.join("systemd/user")
    }

    /// `lazyboy` on this home, with these XDG dirs and no session bus.
    fn cli(&self) -> Command {
        let mut command = cli(&self.home);
        command
            .env("XDG_CONFIG_HOME", &self.config)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env_remove("LAZYBOY_SERVICE_DIR");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cli().args(args).output().unwrap()
    }

    /// The only file in the units dir (its name carries the home's hash).
    fn unit_file(&self) -> PathBuf {
        let files: Vec<PathBuf> = std::fs::read_dir(self.units())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files.into_iter().next().unwrap()
    }
}

fn home_str(dirs: &Dirs) -> &str {
    dirs.home.to_str().unwrap()
}

fn daemon_str() -> String {
    bin("lazyboyd").to_str().unwrap().to_owned()
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let analyze = Path::new("/usr/bin/systemd-analyze");
    let analyze = if analyze.is_file() {
        analyze.to_owned()
    } else {
        which("systemd-analyze").unwrap_or_else(|| {
            panic!(
                "systemd-analyze is missing, so the generated unit cannot be verified: install \
                 the `systemd` package (scripts/test does)"
            )
        })
    };
    let dirs = Dirs::new(SYSTEMD_AWKWARD);
    let output = dirs.run(&["service", "install", "--no-load"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let file = dirs.unit_file();
    assert!(
        stdout.contains(&format!("wrote {}", file.display())),
        "{stdout}"
    );
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("lazyboyd-") && name.ends_with(".service"),
        "{name}"
    );
    // launchd needs the logs dir before the daemon exists; install makes it (private).
    let logs = dirs.home.join(paths::LOGS);
    assert_eq!(
        std::fs::metadata(&logs).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let unit = std::fs::read_to_string(&file).unwrap();
    // --print shows exactly what install writes.
    let printed = dirs.run(&["service", "install", "--print"]);
    assert!(printed.status.success());
    assert_eq!(String::from_utf8(printed.stdout).unwrap(), unit);

    // The real lazyboyd, in the foreground (no --detach), on this home, escaped.
    let exec_start = unit
        .lines()
        .find(|l| l.starts_with("ExecStart="))
        .unwrap_or_else(|| panic!("no ExecStart in\n{unit}"));
    assert_eq!(
        exec_start,
        format!(
            "ExecStart=\"{}\" \"--home\" \"{}\"",
            daemon_str(),
            home_str(&dirs)
                .replace('\\', "\\\\")
                .replace('%', "%%")
                .replace('$', "$$")
        )
    );
    for line in [
        "Type=simple",
        "Restart=on-failure",
        "WantedBy=default.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "no {line} in\n{unit}");
    }

    // `systemd-analyze --user verify` needs a runtime dir; it checks syntax, quoting, and
    // that ExecStart names an executable. Warnings do not change its exit code, so any line
    // about our file fails the test too.
    let verify = Command::new(&analyze)
        .args(["--user", "verify"])
        .arg(&file)
        .env("XDG_RUNTIME_DIR", &dirs.runtime)
        .env("XDG_CONFIG_HOME", &dirs.config)
        .output()
        .unwrap();
    let (out, err) = text(&verify);
    assert!(
        verify.status.success(),
        "systemd-analyze verify failed:\n{out}\n{err}\n{unit}"
    );
    let about_ours: Vec<&str> = out
        .lines()
        .chain(err.lines())
        .filter(|l| l.contains(name))
        .collect();
    assert!(about_ours.is_empty(), "{about_ours:?}\n{unit}");

    // The same check catches a broken unit (so the assertion above can fail).
    let broken = dirs.units().join("broken.service");
    std::fs::write(
        &broken,
        unit.replace(&daemon_str(), &format!("{}-missing", daemon_str())),
    )
    .unwrap();
    let verify = Command::new(&analyze)
        .args(["--user", "verify"])
        .arg(&broken)
        .env("XDG_RUNTIME_DIR", &dirs.runtime)
        .env("XDG_CONFIG_HOME", &dirs.config)
        .output()
        .unwrap();
    assert!(!verify.status.success(), "{:?}", text(&verify));
}

/// Parses a plist with python3's plistlib (a strict XML parser) into JSON.
fn parse_plist(file: &Path) -> serde_json::Value {
    let output = Command::new("python3")
        .arg("-c")
        .arg(
            "import json, plistlib, sys\n\
             with open(sys.argv[1], 'rb') as f: print(json.dumps(plistlib.load(f)))",
        )
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed to parse the plist: {e}"));
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "plistlib rejected it: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn the_launchd_plist_parses_with_the_right_keys() {
    let dirs = Dirs::new(XML_AWKWARD);
    let agents = dirs.config.join("LaunchAgents");
    let output = dirs
        .cli()
        .env("LAZYBOY_SERVICE_DIR", &agents)
        .args(["service", "install", "--platform", "macos", "--no-load"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let files: Vec<PathBuf> = std::fs::read_dir(&agents)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let label = file.file_stem().unwrap().to_str().unwrap().to_owned();
    assert!(label.starts_with("com.lazyboy.daemon."), "{label}");
    assert_eq!(file.extension().unwrap(), "plist");

    let plist = parse_plist(file);
    let home = home_str(&dirs);
    assert_eq!(plist["Label"], label.as_str());
    assert_eq!(
        plist["ProgramArguments"],
        serde_json::json!([daemon_str(), "--home", home])
    );
    assert_eq!(plist["RunAtLoad"], true);
    assert_eq!(plist["KeepAlive"], true);
    assert_eq!(plist["EnvironmentVariables"]["LAZYBOY_HOME"], home);
    let logs = dirs.home.join(paths::LOGS);
    for key in ["StandardOutPath", "StandardErrorPath"] {
        let path = Path::new(plist[key].as_str().unwrap());
        assert_eq!(path.parent(), Some(logs.as_path()), "{key}: {plist}");
    }
    assert_ne!(plist["StandardOutPath"], plist["StandardErrorPath"]);
    // launchd does not create the logs dir itself.
    assert!(logs.is_dir());

    // --print (and its alias --dry-run) writes nothing and shows the same file.
    let printed = dirs
        .cli()
        .env("LAZYBOY_SERVICE_DIR", &agents)
        .args(["service", "install", "--platform", "macos", "--dry-run"])
        .output()
        .unwrap();
    assert!(printed.status.success());
    assert_eq!(printed.stdout, std::fs::read(file).unwrap());

    // Status and uninstall of a file for another platform never call its tool.
    let status = dirs
        .cli()
        .env("LAZYBOY_SERVICE_DIR", &agents)
        .args(["--json", "service", "status", "--platform", "macos"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{:?}", text(&status));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["installed"], true);
    assert_eq!(status["service"], label.as_str());
    let removed = dirs
        .cli()
        .env("LAZYBOY_SERVICE_DIR", &agents)
        .args(["service", "uninstall", "--platform", "macos"])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{:?}", text(&removed));
    assert!(!file.exists());
}

#[tokio::test]
async fn install_without_a_user_manager_writes_the_unit_and_says_how_to_load_it() {
    // An empty runtime dir and no session bus: what a container or a session without
    // systemd gives `systemctl --user`.
    let dirs = Dirs::new("home");
    let output = dirs.run(&["service", "install"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    let file = dirs.unit_file();
    let unit = file.file_name().unwrap().to_str().unwrap();
    assert!(
        stderr.contains(&format!("wrote {}, but could not load it", file.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "to load it: systemctl --user daemon-reload && systemctl --user enable --now {unit}"
        )),
        "{stderr}"
    );
    assert!(
        Client::new(dirs.home.clone())
            .get::<Health>("/api/health")
            .await
            .is_err(),
        "no daemon was started"
    );

    let status = dirs.run(&["service", "status"]);
    let (stdout, _) = text(&status);
    assert_eq!(status.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("(installed)"), "{stdout}");
    assert!(stdout.contains("manager: unavailable: "), "{stdout}");

    // Uninstall removes the file even so, and again is a no-op.
    let output = dirs.run(&["service", "uninstall"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("removed {}", file.display())),
        "{stdout}"
    );
    assert!(!file.exists());
    let output = dirs.run(&["service", "uninstall"]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    assert!(stdout.contains("is not installed"), "{stdout}");
    assert_eq!(dirs.run(&["service", "status"]).status.code(), Some(3));
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
