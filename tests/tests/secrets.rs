//! The daemon's secrets (provider keys, the API token) stay out of reach of the commands its
//! agents run, which are processes of the same user whose parent is the daemon: its
//! `/proc/<pid>/environ` holds none of them, and it is not dumpable, so a process of the same
//! user may read neither that file nor its memory. The keys still reach the model.
//!
//! Root may read every process's `/proc` files, so where the test runs as root (containers, CI)
//! the daemon runs as `nobody` instead: only a daemon of an ordinary user shows what that
//! user's other processes can and cannot read.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use lazyboy_protocol::{Health, TaskAccepted, paths};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{KillOnDrop, TestDaemon, bin, cli, output_of, stderr_of, temp_home, wait_for};

const OPENAI_KEY: &str = "sk-test-openai-4c1d0b7e";
const ANTHROPIC_KEY: &str = "sk-test-anthropic-93a2f6c1";
const LAZYBOY_KEY: &str = "sk-test-lazyboy-0e8b5d21";
const PROVIDER_KEY: &str = "sk-test-provider-7f3e9a58";
const TOKEN: &str = "lb-test-token-b61c4e02";
/// The variable the config's provider names for its key (`api_key_env`).
const PROVIDER_ENV: &str = "MOCK_PROVIDER_KEY";

/// Every secret value the tests hand the daemon.
const SECRETS: [&str; 5] = [OPENAI_KEY, ANTHROPIC_KEY, LAZYBOY_KEY, PROVIDER_KEY, TOKEN];

/// `nobody`, when the test runs as root.
const UNPRIVILEGED: u32 = 65534;

/// The uid the daemon runs as in [`an_agents_command_cannot_read_the_daemons_keys`].
fn daemon_uid() -> u32 {
    if nix::unistd::geteuid().is_root() {
        UNPRIVILEGED
    } else {
        nix::unistd::geteuid().as_raw()
    }
}

/// `TestDaemon::command(home)`, run as [`daemon_uid`] (through `setpriv` when we are root).
fn daemon_command(home: &Path) -> Command {
    let base = TestDaemon::command(home);
    let mut command = if nix::unistd::geteuid().is_root() {
        let uid = UNPRIVILEGED.to_string();
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", &uid, "--regid", &uid, "--clear-groups", "--"])
            .arg(bin("lazyboyd"));
        command
    } else {
        Command::new(bin("lazyboyd"))
    };
    for (name, value) in base.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.stdin(Stdio::null());
    command
}

/// The process's initial environment, as `/proc/<pid>/environ` shows it (read as root here,
/// or as the daemon's own user when the test is not root).
fn environ(pid: u32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    String::from_utf8_lossy(&bytes).replace('\0', "\n")
}

/// The pipes (`pipe:[inode]`) process `pid` has open.
fn pipes(pid: &str) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.starts_with("pipe:"))
        .collect()
}

fn assert_no_secret(text: &str, what: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_command_cannot_read_the_daemons_keys() {
    let mock = MockModel::start().await;
    // The issue's own reproduction, then: may this user open the daemon's memory, and what
    // reaches the command's own environment.
    let probe = "cat /proc/$PPID/environ | tr '\\0' '\\n' | grep -E 'API_KEY|TOKEN|sk-test'; \
                 if cat /proc/$PPID/environ >/dev/null 2>&1; then echo environ-readable; \
                 else echo environ-denied; fi; \
                 if (: < /proc/$PPID/mem) 2>/dev/null; then echo mem-open; else echo mem-denied; fi; \
                 echo children-see=$(env | grep -c sk-test)";
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        serde_json::json!({ "cmd": probe }),
    ));
    mock.push_fn(|request| {
        let seen = request.tool_result_for("c1").unwrap_or("").to_owned();
        Reply::tool_call("m1", "send_message", serde_json::json!({ "text": seen }))
    });
    mock.push(Reply::text("done"));

    let home = temp_home();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "default_provider = \"mock\"\nheartbeat_secs = 1\n\n[providers.mock]\nwire = \"openai\"\n\
             base_url = \"{}\"\nmodel = \"mock-model\"\napi_key_env = \"{PROVIDER_ENV}\"\n",
            mock.openai_base_url()
        ),
    )
    .unwrap();
    nix::unistd::chown(
        home.path(),
        Some(daemon_uid().into()),
        Some(daemon_uid().into()),
    )
    .unwrap();
    let log = std::fs::File::create(home.path().join("daemon-stderr.log")).unwrap();
    let mut command = daemon_command(home.path());
    command
        .args(["--listen", "127.0.0.1:0"])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env(PROVIDER_ENV, PROVIDER_KEY)
        .env("LAZYBOY_TOKEN", TOKEN)
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut child = KillOnDrop(command.spawn().unwrap());
    let client = lazyboy::connection::Client::with_token(home.path().to_owned(), TOKEN);
    let health: Health = wait_for(Duration::from_secs(20), "health", || {
        let client = client.clone();
        async move { client.get::<Health>("/api/health").await.ok() }
    })
    .await;
    let pid = health.pid;
    // The process we started is the one serving, and the lock names it.
    assert_eq!(pid, child.0.id(), "{}", stderr_of(home.path()));
    let lock = std::fs::read_to_string(home.path().join(paths::LOCK)).unwrap();
    assert_eq!(lock.trim(), pid.to_string());

    let env = environ(pid);
    assert!(env.contains("LAZYBOY_HOME="), "environ read: {env}");
    assert_no_secret(&env, "/proc/<daemon>/environ");
    for name in [
        "OPENAI_API_KEY=",
        "ANTHROPIC_API_KEY=",
        "LAZYBOY_TOKEN=",
        "MOCK_PROVIDER_KEY=",
    ] {
        assert!(!env.contains(name), "{name} is still set:\n{env}");
    }
    // Not dumpable: the kernel hands a non-dumpable process's /proc files to root, whatever
    // user it runs as (a dumpable one's belong to its own user).
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let real_uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert_eq!(real_uid, daemon_uid().to_string());
    let owner = std::fs::metadata(format!("/proc/{pid}/environ"))
        .unwrap()
        .uid();
    assert_eq!(
        owner, 0,
        "a dumpable daemon's /proc files belong to its user"
    );

    let accepted: TaskAccepted = client
        .call(
            reqwest::Method::POST,
            "/api/agents/default/tasks",
            Some(&lazyboy_protocol::CreateTask {
                objective: "look around".to_owned(),
                workspace: None,
            }),
        )
        .await
        .unwrap();
    let path = format!("/api/tasks/{}", accepted.task);
    let task = wait_for(Duration::from_secs(60), "the task to finish", || {
        let client = client.clone();
        let path = path.clone();
        async move {
            let task: lazyboy_protocol::Task = client.get(&path).await.ok()?;
            task.verdict.is_some().then_some(task)
        }
    })
    .await;
    let seen = task.final_message.unwrap_or_default();
    assert_no_secret(&seen, "the agent's command");
    assert!(seen.contains("environ-denied"), "{seen}");
    assert!(seen.contains("mem-denied"), "{seen}");
    assert!(seen.contains("children-see=0"), "{seen}");

    // The key still works: the model got the provider's key, and only that one.
    let requests = mock.requests();
    assert!(requests.len() >= 2);
    for request in &requests {
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {PROVIDER_KEY}").as_str())
        );
    }
    let log = std::fs::read_to_string(home.path().join(paths::LOGS).join("lazyboyd.log"))
        .unwrap_or_default();
    assert_no_secret(&log, "the daemon's log");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(
        child.0.wait().unwrap().success(),
        "{}",
        stderr_of(home.path())
    );
}

#[tokio::test]
async fn lazyboy_daemon_start_hands_the_keys_over_and_keeps_its_pid() {
    let home = temp_home();
    let mut start = cli(home.path());
    start
        .args(["daemon", "start", "--json"])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("LAZYBOY_API_KEY", LAZYBOY_KEY)
        .env("LAZYBOY_TOKEN", TOKEN);
    let output = output_of(start).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let health: Health = serde_json::from_slice(&output.stdout).unwrap();
    let pid = health.pid;
    // The pid the CLI printed is the daemon's: it holds the lock, leads its own session
    // (`--detach`), and answers health.
    let lock = std::fs::read_to_string(home.path().join(paths::LOCK)).unwrap();
    assert_eq!(lock.trim(), pid.to_string());
    let sid = nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid as i32))).unwrap();
    assert_eq!(sid.as_raw() as u32, pid, "the daemon called setsid");
    let client = lazyboy::connection::Client::with_token(home.path().to_owned(), TOKEN);
    let again: Health = client.get("/api/health").await.unwrap();
    assert_eq!(again.pid, pid);

    assert_no_secret(&environ(pid), "/proc/<daemon>/environ");
    // The pipe that carried the secrets was read to its end and closed: the daemon holds no
    // pipe but those it inherited from us (cargo's jobserver, say).
    let ours = pipes("self");
    for pipe in pipes(&pid.to_string()) {
        assert!(ours.contains(&pipe), "the daemon still holds {pipe}");
    }
    let stop = output_of({
        let mut stop = cli(home.path());
        stop.args(["daemon", "stop"]).env("LAZYBOY_TOKEN", TOKEN);
        stop
    })
    .await;
    assert!(stop.status.success());
}
