//! Nothing but the daemon reaches the box's browser (CDP) and screen (X11, VNC) (issue 21,
//! finding 12), attacked the way a steered model would, against the real engine and image:
//! - from a confined agent command on the host: the box publishes no port (`docker port`,
//!   the engine's forwarders), nothing answers on any TCP port of its bridge address, and
//!   its files (through `/proc/<pid>/root` and the overlay's merged directory, readable by a
//!   root daemon's command) hold no socket that speaks CDP or takes the display's cookie;
//! - from inside the box, as the agents' user (`box_shell`): no TCP or UNIX socket speaks
//!   CDP, the display refuses a client without its cookie and the cookie is unreadable, the
//!   daemon's entry points (`box-port`, `box-cdp`, `box-input`, `box-shot`, `box-browser`)
//!   refuse, the profiles and the browser's processes are out of reach;
//! - meanwhile the daemon's own browser tools work;
//! - a box an older daemon left publishing its ports is retired as soon as the daemon
//!   starts, and the one made instead publishes nothing, on the same volume, whose profiles
//!   are handed to the browser user (links box planted dropped); an image older than that
//!   contract is refused.
//!
//! The host-side attack is a root daemon's (the box's files are root's on the host): these
//! tests need root and say so.

mod probes;

use std::process::Command;
use std::time::Duration;

use lazyboy_protocol::{BoxState, BoxStatus, ToolStatus};
use lazyboy_tests::boxes::{self, SITE, TestBox, daemon, result_of, start_with_site};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, create_task, task_events, wait_for};
use serde_json::{Value, json};

fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "these attacks are a root daemon's commands (the box's files are root's on the host): \
         run the box tests as root (scripts/test does on CI)"
    );
}

/// `docker ARGS`, its stdout trimmed (panics on failure).
fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The `REPORT {json}` line a probe printed.
fn report(output: &str) -> Value {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("REPORT "))
        .unwrap_or_else(|| panic!("the probe printed no report:\n{output}"));
    serde_json::from_str(line).unwrap()
}

/// A command that runs `script` with python3, its arguments after.
fn python(script: &str, args: &[&str]) -> String {
    format!("python3 - {} <<'PROBE'\n{script}\nPROBE", args.join(" "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_command_on_the_host_reaches_neither_the_browser_nor_the_screen() {
    require_root();
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;
    start_with_site(&daemon, &test_box).await;
    // A named agent: its commands run under `workspace-write`, the default.
    add_agent(&daemon, "intruder").await;

    assert_eq!(test_box.published(), "", "the box publishes a port");
    assert_eq!(test_box.inspect("{{json .HostConfig.PortBindings}}"), "{}");
    let ip = test_box.inspect("{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}");
    let pid = test_box.inspect("{{.State.Pid}}");
    let merged = test_box.inspect("{{.GraphDriver.Data.MergedDir}}");
    assert!(!ip.is_empty() && pid != "0", "ip {ip:?}, pid {pid}");
    // The control: one port in the box that does listen on its address, so a scan that
    // reached nothing at all would fail.
    docker(&[
        "exec",
        "-d",
        "-u",
        "box",
        &test_box.name,
        "python3",
        "-m",
        "http.server",
        "7777",
        "--bind",
        "0.0.0.0",
    ]);
    let control = format!("{ip}:7777");
    wait_for(
        Duration::from_secs(20),
        "the control port in the box",
        || {
            let control = control.clone();
            async move { std::net::TcpStream::connect(control).ok().map(|_| ()) }
        },
    )
    .await;

    mock.push(Reply::tool_call(
        "a1",
        "exec_command",
        json!({"cmd": python(probes::HOST, &[&ip, &pid, &merged]), "block_until_ms": 170_000}),
    ))
    .push(Reply::tool_call(
        "a2",
        "browser_navigate",
        json!({"url": format!("{SITE}/form")}),
    ))
    .push(Reply::tool_call("a3", "browser_snapshot", json!({})))
    .push(Reply::text("looked around"));
    let task = create_task(&daemon, "intruder", "look around", None).await;
    boxes::wait_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    let (status, output) = result_of(&events, "a1");
    assert_eq!(status, ToolStatus::Ok, "{output}");
    let report = report(&output);
    eprintln!("what the host-side probe saw: {report:#}");

    assert_eq!(
        report["open"],
        json!([7777]),
        "open ports on {ip}: {report:#}"
    );
    assert_eq!(report["speaks"], json!({"7777": null}), "{report:#}");
    assert_eq!(
        report["proxies"],
        json!([]),
        "forwarders to the box: {report:#}"
    );
    let read = report["control"].as_object().unwrap().values();
    let read: Vec<&Value> = read.filter(|v| **v == json!("#!/bin/sh")).collect();
    assert!(
        !read.is_empty(),
        "the probe read none of the box's files: {report:#}"
    );
    assert_eq!(report["cookie_read"], json!(true), "{report:#}");
    assert_eq!(report["cdp_files"], json!([]), "{report:#}");
    assert_eq!(report["x11_files"], json!([]), "{report:#}");
    let relay = report["relay_from_host"].as_str().unwrap();
    assert!(
        relay.starts_with("error:"),
        "the relay answered the host: {relay}"
    );

    // Meanwhile the daemon's own way works.
    let (status, snapshot) = result_of(&events, "a3");
    assert_eq!(status, ToolStatus::Ok, "{snapshot}");
    assert!(snapshot.contains("Form"), "{snapshot}");
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_box_shell_command_reaches_neither_the_browser_nor_the_screen() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;
    start_with_site(&daemon, &test_box).await;

    mock.push(Reply::tool_call(
        "i1",
        "box_shell",
        json!({"command": python(probes::INSIDE, &[]), "block_until_ms": 120_000}),
    ))
    .push(Reply::tool_call(
        "i2",
        "browser_navigate",
        json!({"url": format!("{SITE}/form")}),
    ))
    .push(Reply::tool_call("i3", "browser_snapshot", json!({})))
    .push(Reply::text("looked around"));
    let task = create_task(&daemon, "default", "look around the box", None).await;
    boxes::wait_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    let (status, output) = result_of(&events, "i1");
    assert_eq!(status, ToolStatus::Ok, "{output}");
    let report = report(&output);
    eprintln!("what the probe in the box saw: {report:#}");

    assert_eq!(report["whoami"], "box");
    // Controls: the test site listens (as box, on loopback), the display's socket is there.
    assert_eq!(
        report["listen"],
        json!([8000]),
        "listening in the box: {report:#}"
    );
    assert_eq!(report["cdp_tcp"], json!([]), "{report:#}");
    let unix = report["unix"].as_array().unwrap();
    assert!(unix.contains(&json!("@/tmp/.X11-unix/X1")), "{report:#}");
    assert_eq!(report["cdp_unix"], json!([]), "{report:#}");
    // 00: X11's "Failed" (no cookie); 01 would be a client on the display.
    assert_eq!(report["x11_reply"], "00", "{report:#}");
    assert_ne!(report["xdpyinfo"], json!(0), "{report:#}");
    for (tool, code) in report["tools"].as_object().unwrap() {
        assert_eq!(*code, json!(77), "{tool} as box: {report:#}");
    }
    for (what, denied) in report["denied"].as_object().unwrap() {
        assert_eq!(*denied, json!(true), "box could {what}: {report:#}");
    }

    let (status, snapshot) = result_of(&events, "i3");
    assert_eq!(status, ToolStatus::Ok, "{snapshot}");
    assert!(snapshot.contains("Form"), "{snapshot}");
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test]
async fn an_older_daemons_box_is_retired_when_the_daemon_starts() {
    let test_box = TestBox::new();
    let name = test_box.name.clone();
    // The old daemon's box: noVNC and CDP published on the host's loopback. What runs in it
    // does not matter here, what it publishes does.
    let old = docker(&[
        "run",
        "-d",
        "--name",
        &name,
        "--label",
        "lazyboy.box=1",
        "--label",
        &format!("lazyboy.box.name={name}"),
        "-p",
        "127.0.0.1::6080",
        "-p",
        "127.0.0.1::9223",
        "-v",
        &format!("{name}-home:/home/box"),
        "--entrypoint",
        "/usr/bin/tini",
        &boxes::image(),
        "--",
        "sleep",
        "infinity",
    ]);
    assert_eq!(
        test_box.published().lines().count(),
        2,
        "{}",
        test_box.published()
    );
    // Its volume as an older image left it: everything box's, and a link box planted in a
    // profile (the browser would write through it into a file box reads).
    test_box.exec(
        "root",
        "chown -R 1000:1000 /home/box && chmod 755 /home/box /home/box/profiles && \
         mkdir -p /home/box/profiles/ann && ln -s /home/box/work/stolen /home/box/profiles/ann/Cookies",
    );

    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;
    // Nobody asks for the box: the daemon's start alone retires it.
    wait_for(Duration::from_secs(60), "the old box to be retired", || {
        let old = old.clone();
        async move {
            let gone = Command::new("docker")
                .args(["inspect", &old])
                .output()
                .is_ok_and(|o| !o.status.success());
            gone.then_some(())
        }
    })
    .await;

    let response = daemon
        .http
        .post(daemon.url("/api/box/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    assert_ne!(test_box.inspect("{{.Id}}"), old);
    assert_eq!(test_box.published(), "", "the new box publishes a port");
    // The volume carried over, its profiles now the browser user's alone, the link gone.
    let owners = test_box.exec(
        "root",
        "stat -c %U:%G:%a /home/box /home/box/profiles /home/box/profiles/ann; \
         test -L /home/box/profiles/ann/Cookies && echo linked || echo unlinked",
    );
    assert_eq!(
        owners,
        "root:box:1775\nbrowser:browser:700\nbrowser:browser:700\nunlinked\n"
    );
    let status: BoxStatus = daemon.client().get("/api/box").await.unwrap();
    assert_eq!(status.state, BoxState::Running, "{status:?}");
    daemon.stop();
}

#[tokio::test]
async fn an_image_older_than_the_contract_is_refused() {
    let test_box = TestBox::new();
    // The current image, labelled as the old contract (published ports): it must not run.
    let old = format!("{}-oldapi", test_box.name);
    let mut build = Command::new("docker")
        .args(["build", "-q", "-t", &old, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let dockerfile = format!("FROM {}\nLABEL lazyboy.box.api=1\n", boxes::image());
    std::io::Write::write_all(&mut build.stdin.take().unwrap(), dockerfile.as_bytes()).unwrap();
    let built = build.wait_with_output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let _remove = RemoveImage(old.clone());

    let mock = MockModel::start().await;
    let env = [
        ("LAZYBOY_BOX_NAME", test_box.name.as_str()),
        ("LAZYBOY_BOX_IMAGE", old.as_str()),
    ];
    let daemon = TestDaemon::start_with_model(&mock, "openai", &env).await;
    let response = daemon
        .http
        .post(daemon.url("/api/box/start"))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    assert!(body.contains("older than this daemon"), "{body}");
    let status: BoxStatus = daemon.client().get("/api/box").await.unwrap();
    assert_eq!(status.state, BoxState::Unavailable, "{status:?}");
    let made = docker(&[
        "ps",
        "-aq",
        "--filter",
        &format!("name=^{}$", test_box.name),
    ]);
    assert_eq!(made, "", "a container was made from the old image");
    daemon.stop();
}

/// Removes the test's image when the test ends, however it ends.
struct RemoveImage(String);

impl Drop for RemoveImage {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rmi", "-f", &self.0])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}
