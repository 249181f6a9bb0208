//! The sandbox's gaps of issue 21, attacked from a confined agent's own command (the real
//! daemon, a scripted model), each beside a control run by an unconfined (`sandbox = "off"`)
//! agent that shows the attack works on this machine, so a pass means the sandbox stopped
//! it:
//! - TIOCSTI into another terminal (a pty the test holds): the line never arrives;
//! - `mknod` of a device in the workspace (a root command's way to the raw disk): refused;
//! - the Docker socket: neither `curl --unix-socket` nor `docker run` reaches dockerd;
//! - an abstract UNIX socket listened on outside the sandbox: the connect fails;
//! - `/proc/<pid>/environ` of a process outside the sandbox holding a fake key: unreadable;
//! - `doctor` names every layer.
//!
//! Root is needed (as in CI): TIOCSTI into a terminal that is not one's own needs
//! CAP_SYS_ADMIN, and the control must be able to do it. The tests fail rather than skip
//! without it. Needs python3, curl, docker (scripts/test installs them).

use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::time::{Duration, Instant};

use lazyboy_protocol::{CheckStatus, DoctorReport};
use lazyboy_tests::attacks::{add, is_root, require, run_command};
use lazyboy_tests::mock_model::MockModel;
use lazyboy_tests::{KillOnDrop, TestDaemon, output_of};
use serde_json::json;

/// A daemon with a confined agent (`boxed`, workspace-write) and an unconfined one
/// (`trusted`, the control).
async fn daemon_with_agents(mock: &MockModel) -> TestDaemon {
    let daemon = TestDaemon::start_with_model(mock, "openai", &[]).await;
    add(&daemon, json!({"name": "boxed"})).await;
    add(&daemon, json!({"name": "trusted", "sandbox": "off"})).await;
    daemon
}

/// What arrived on the pty's slave side within `wait` (input pushed with TIOCSTI is read
/// from there).
fn read_pushed(slave: &std::fs::File, wait: Duration) -> String {
    nix::fcntl::fcntl(
        slave.as_fd(),
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    let mut reader = slave;
    loop {
        let mut buf = [0u8; 256];
        match reader.read(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ if Instant::now() >= deadline => break,
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiocsti_cannot_push_a_line_into_another_terminal() {
    require(
        "root (TIOCSTI into another terminal needs CAP_SYS_ADMIN)",
        is_root(),
    );
    let pty = nix::pty::openpty(None, None).unwrap();
    let slave = std::fs::File::from(pty.slave);
    let name = nix::unistd::ttyname(slave.as_fd()).unwrap();
    let mock = MockModel::start().await;
    let daemon = daemon_with_agents(&mock).await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("push.py"),
        "import fcntl, os, sys, termios\n\
         fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n\
         for c in sys.argv[2] + '\\n':\n    fcntl.ioctl(fd, termios.TIOCSTI, c.encode())\n\
         print('pushed')\n",
    )
    .unwrap();
    let push = |word: &str| format!("python3 push.py {} {word} 2>&1", name.display());

    let control = run_command(&daemon, &mock, "trusted", ws.path(), &push("control")).await;
    assert!(control.contains("pushed"), "{control}");
    let arrived = read_pushed(&slave, Duration::from_secs(5));
    assert!(
        arrived.contains("control"),
        "the control's line: {arrived:?}"
    );

    let attack = run_command(&daemon, &mock, "boxed", ws.path(), &push("pwned")).await;
    assert!(!attack.contains("pushed"), "{attack}");
    // EPERM from seccomp or for want of CAP_SYS_ADMIN, EACCES from Landlock: each suffices.
    assert!(attack.contains("PermissionError"), "{attack}");
    let arrived = read_pushed(&slave, Duration::from_millis(500));
    assert!(!arrived.contains("pwned"), "the line arrived: {arrived:?}");
    drop(pty.master);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_cannot_be_made_in_the_workspace() {
    require("root (mknod needs CAP_MKNOD)", is_root());
    let mock = MockModel::start().await;
    let daemon = daemon_with_agents(&mock).await;
    let ws = tempfile::tempdir().unwrap();
    // The numbers of /dev/null: harmless, yet a device all the same.
    let out = run_command(&daemon, &mock, "boxed", ws.path(), "mknod dev c 1 3 2>&1").await;
    assert!(
        out.contains("not permitted") || out.contains("denied"),
        "{out}"
    );
    assert!(!ws.path().join("dev").exists(), "a device node was made");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docker_socket_is_out_of_reach() {
    let socket = std::path::Path::new("/var/run/docker.sock");
    require("dockerd running (/var/run/docker.sock)", socket.exists());
    let mock = MockModel::start().await;
    let daemon = daemon_with_agents(&mock).await;
    let ws = tempfile::tempdir().unwrap();
    let script = "curl -s --unix-socket /var/run/docker.sock http://docker/version; \
                  echo \" curl=$?\"; \
                  docker run --rm --network host --entrypoint true lazyboy/box:latest 2>&1; \
                  echo \" docker=$?\"";
    let control = run_command(&daemon, &mock, "trusted", ws.path(), script).await;
    assert!(control.contains("ApiVersion"), "dockerd answers: {control}");
    assert!(control.contains(" docker=0"), "a container ran: {control}");

    let attack = run_command(&daemon, &mock, "boxed", ws.path(), script).await;
    assert!(!attack.contains("ApiVersion"), "{attack}");
    assert!(!attack.contains(" curl=0"), "{attack}");
    assert!(!attack.contains(" docker=0"), "{attack}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abstract_unix_socket_outside_the_sandbox_cannot_be_reached() {
    let name = format!("lazyboy-test-{}-{}", std::process::id(), uuid_ish());
    let listener = UnixListener::bind_addr(&{
        use std::os::linux::net::SocketAddrExt;
        SocketAddr::from_abstract_name(name.as_bytes()).unwrap()
    })
    .unwrap();
    listener.set_nonblocking(true).unwrap();
    let mock = MockModel::start().await;
    let daemon = daemon_with_agents(&mock).await;
    let ws = tempfile::tempdir().unwrap();
    let script = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
         s.connect(b'\\0{name}'); s.sendall(b'hello'); print('connected')\" 2>&1"
    );
    let control = run_command(&daemon, &mock, "trusted", ws.path(), &script).await;
    assert!(control.contains("connected"), "{control}");
    assert!(listener.accept().is_ok(), "the control's connection");

    let attack = run_command(&daemon, &mock, "boxed", ws.path(), &script).await;
    assert!(!attack.contains("connected"), "{attack}");
    assert!(attack.contains("PermissionError"), "{attack}");
    assert!(listener.accept().is_err(), "a confined command connected");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_processs_environment_is_unreadable() {
    const KEY: &str = "sk-fake-environ-7f3a9c2e";
    let holder = KillOnDrop(
        std::process::Command::new("sleep")
            .arg("600")
            .env("FAKE_API_KEY", KEY)
            .spawn()
            .unwrap(),
    );
    let pid = holder.0.id();
    let mock = MockModel::start().await;
    let daemon = daemon_with_agents(&mock).await;
    let ws = tempfile::tempdir().unwrap();
    // /proc shows a child's environment once it has exec'd.
    lazyboy_tests::wait_for(
        Duration::from_secs(10),
        "sleep's environment",
        || async move {
            std::fs::read(format!("/proc/{pid}/environ"))
                .ok()
                .filter(|env| String::from_utf8_lossy(env).contains(KEY))
        },
    )
    .await;
    let script = format!("tr '\\0' '\\n' < /proc/{pid}/environ | grep FAKE_API_KEY 2>&1");
    let control = run_command(&daemon, &mock, "trusted", ws.path(), &script).await;
    assert!(control.contains(KEY), "{control}");

    let attack = run_command(&daemon, &mock, "boxed", ws.path(), &script).await;
    assert!(!attack.contains(KEY), "{attack}");
    assert!(attack.contains("Permission denied"), "{attack}");
    drop(holder);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_every_layer() {
    let daemon = TestDaemon::start().await;
    let mut command = daemon.cli();
    command.args(["--json", "doctor"]);
    let out = output_of(command).await;
    let report: DoctorReport =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let find = |name: &str| {
        report
            .checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} check: {report:#?}"))
    };
    let sandbox = find("sandbox");
    assert!(sandbox.detail.contains("landlock (ABI"), "{sandbox:?}");
    for rule in ["device ioctls denied", "abstract UNIX sockets scoped"] {
        assert!(sandbox.detail.contains(rule), "{rule}: {sandbox:?}");
    }
    for name in ["sandbox", "seccomp", "git files", "cgroups"] {
        let check = find(name);
        assert_eq!(check.status, CheckStatus::Ok, "{check:?}");
    }
    assert!(find("cgroups").detail.contains("lazyboy-"), "{report:#?}");
    daemon.stop();
}

/// A few random hex digits (no extra dependency for a name).
fn uuid_ish() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{nanos:08x}")
}
