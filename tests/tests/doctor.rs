//! `lazyboy doctor`: on a home with nothing configured every line says what to do and the
//! exit code is 1; configured, the model, an MCP server and web search check out.

use lazyboy_protocol::{CheckStatus, DoctorReport};
use lazyboy_tests::mcp_servers::{self, toml_str};
use lazyboy_tests::mock_model::MockModel;
use lazyboy_tests::{model_config, output_of, temp_home};

/// `lazyboy [--json] doctor` on `home`, with no model from the environment and a service
/// directory of its own; stops the daemon it started. Returns (exit code, stdout).
async fn doctor(home: &std::path::Path, json: bool) -> (i32, String) {
    let services = tempfile::tempdir().unwrap();
    let mut command = lazyboy_tests::cli(home);
    for var in [
        "LAZYBOY_BASE_URL",
        "LAZYBOY_MODEL",
        "LAZYBOY_API_KEY",
        "LAZYBOY_WIRE",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ] {
        command.env_remove(var);
    }
    command.env("LAZYBOY_SERVICE_DIR", services.path());
    if json {
        command.arg("--json");
    }
    command.arg("doctor");
    let out = output_of(command).await;
    let mut stop = lazyboy_tests::cli(home);
    stop.args(["daemon", "stop"]);
    output_of(stop).await;
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_configured_every_line_says_what_to_do_and_it_fails() {
    let home = temp_home();
    let (code, text) = doctor(home.path(), false).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("warn") || line.starts_with("FAIL") {
            let next = lines.get(i + 1).copied().unwrap_or_default();
            assert!(
                next.trim_start().starts_with("→ "),
                "no fix after {line:?}:\n{text}"
            );
        }
    }
    for check in [
        "warn  config:",
        "FAIL  model: no model is configured",
        "warn  mcp: no MCP servers",
        "warn  web search:",
        "docker:",
        "box image:",
        "FAIL  service: not installed",
    ] {
        assert!(text.contains(check), "{check:?} missing:\n{text}");
    }
    assert!(text.contains("→ lazyboy service install"), "{text}");
    assert!(text.contains("LAZYBOY_BASE_URL"), "{text}");
    assert!(text.contains("[web_search]"), "{text}");
    assert!(text.contains("[mcp.servers.NAME]"), "{text}");

    let (code, json) = doctor(home.path(), true).await;
    assert_eq!(code, 1);
    let report: DoctorReport = serde_json::from_str(json.trim()).unwrap();
    assert!(report.checks.len() >= 7);
    for check in &report.checks {
        if check.status != CheckStatus::Ok {
            assert!(check.fix.is_some(), "{check:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_the_model_an_mcp_server_and_search_check_out() {
    let mock = MockModel::start().await;
    let search = axum::Router::new().route(
        "/search",
        axum::routing::get(|| async {
            axum::Json(serde_json::json!({"results": [
                {"title": "t", "url": "https://x.example/", "content": "c"}]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, search).await.unwrap() });
    let home = temp_home();
    let config = format!(
        "{}\n[web_search]\nprovider = \"searxng\"\nurl = \"http://127.0.0.1:{port}\"\n\
         \n[mcp.servers.time]\ncommand = {}\n",
        model_config(&mock, "openai"),
        toml_str(&mcp_servers::time())
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let (_, json) = doctor(home.path(), true).await;
    let report: DoctorReport = serde_json::from_str(json.trim()).unwrap();
    let status = |name: &str| {
        report
            .checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} in {report:?}"))
            .status
    };
    // These machines have Landlock (ABI 7): commands can be confined.
    for name in ["config", "model", "mcp time", "web search", "sandbox"] {
        assert_eq!(status(name), CheckStatus::Ok, "{name}: {report:#?}");
    }
    // ... through the small helper beside the daemon, not the daemon itself.
    let sandbox = report.checks.iter().find(|c| c.name == "sandbox").unwrap();
    assert!(
        sandbox.detail.contains("lazyboy-sandbox-under-test"),
        "{sandbox:?}"
    );
    // The default agent's sandbox is said here, once (not by every `lazyboy run`).
    assert!(
        sandbox
            .detail
            .contains("`lazyboy run` (the default agent) is confined too (workspace-write"),
        "{sandbox:?}"
    );
    // Where each binary was found, and that the running daemon is this CLI's build.
    assert_eq!(status("binaries"), CheckStatus::Ok, "{report:#?}");
    let binaries = report.checks.iter().find(|c| c.name == "binaries").unwrap();
    let build =
        lazyboy_protocol::build_name(env!("CARGO_PKG_VERSION"), lazyboy_tests::UNDER_TEST_COMMIT);
    for part in [
        "lazyboy-under-test".to_owned(),
        "lazyboyd-under-test (from LAZYBOY_DAEMON_BIN)".to_owned(),
        "lazyboy-sandbox-under-test".to_owned(),
        format!("running: lazyboyd {build}"),
    ] {
        assert!(
            binaries.detail.contains(&part),
            "{part:?} missing: {binaries:?}"
        );
    }
    assert!(mock.request_count() >= 1);
}
