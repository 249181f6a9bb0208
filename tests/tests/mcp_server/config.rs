//! What a person pastes into a client: `lazyboy mcp serve --help` names the configs of Claude
//! Desktop, Codex, Cursor and Zed, and `--print-config` gives a stdio command and an HTTP URL
//! with its bearer header that each open a working session as printed.

use std::process::Stdio;
use std::time::Duration;

use lazyboy_tests::{TestDaemon, bin, output_of};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "pasted", "version": "1"}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_help_and_the_printed_config_work_as_pasted() {
    let daemon = TestDaemon::start().await;
    let mut help = daemon.cli();
    help.args(["mcp", "serve", "--help"]);
    let out = output_of(help).await;
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "claude_desktop_config.json",
        "Cursor",
        "[mcp_servers.lazyboy]",
        "Zed",
        r#""args": ["mcp", "serve"]"#,
        "--print-config",
    ] {
        assert!(help.contains(needle), "{needle:?} not in:\n{help}");
    }

    let mut print = daemon.cli();
    print.args(["--json", "mcp", "serve", "--print-config"]);
    let out = output_of(print).await;
    assert!(out.status.success(), "{out:?}");
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();

    // HTTP: the URL with the header as printed opens a session; without it, 401.
    let url = config["http"]["url"].as_str().unwrap();
    let bearer = config["http"]["headers"]["Authorization"].as_str().unwrap();
    assert_eq!(bearer, format!("Bearer {}", daemon.token()));
    let post = |with: bool| {
        let mut request = daemon
            .anonymous()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize());
        if with {
            request = request.header("authorization", bearer);
        }
        request.send()
    };
    let opened = post(true).await.unwrap();
    assert_eq!(opened.status(), 200);
    assert!(opened.headers().contains_key("mcp-session-id"));
    assert_eq!(post(false).await.unwrap().status(), 401);

    // stdio: the command and args as printed (full paths) answer initialize.
    let command = config["stdio"]["command"].as_str().unwrap();
    let args: Vec<&str> = config["stdio"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(std::path::Path::new(command), bin("lazyboy"));
    let mut child = tokio::process::Command::new(command)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.as_mut().unwrap();
    stdin
        .write_all(format!("{}\n", initialize()).as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("an answer within 30 s")
        .unwrap()
        .expect("the relay answered");
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "lazyboy",
        "{answer}"
    );
    drop(child);
    daemon.stop();
}
