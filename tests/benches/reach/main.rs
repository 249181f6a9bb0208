//! Reach benchmarks (issue 12): what an agent's step pays for an MCP tool, measured on the
//! daemon's real tool path (a task whose rounds each call `mcp__everything__echo`, against
//! the same task calling a no-op tool, step to step at the mock model); then, in process
//! (the daemon's own modules, `lazyboyd::mcp` and `lazyboyd::web`, in release): an MCP stdio
//! call through the daemon's client against the same call over a bare pipe (what the server
//! itself takes), an MCP server's cold start, and `web_fetch` of a cached URL and of a 1 MB
//! local page.
//!
//! `cargo bench -p lazyboy-tests --bench reach` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions. Needs the MCP servers
//! (`scripts/mcp-servers`).

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::mcp_servers;
use lazyboyd::mcp::{Manager, McpSection, ServerConfig};
use lazyboyd::web::{Web, WebSection, search::WebSearchSection};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

mod daemon_path;

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn run() {
    let calls = if quick() { 50 } else { 500 };
    let starts = if quick() { 2 } else { 7 };
    let mut rows: Vec<(String, String, String)> = Vec::new();

    let rounds = if quick() { 20 } else { 100 };
    let (noop, mcp) = daemon_path::steps(rounds).await;
    rows.push((
        format!("an agent's step calling a no-op tool (`read_file` of 1 byte), median of {rounds}"),
        ms(noop),
        "—".into(),
    ));
    rows.push((
        format!(
            "the same step calling `mcp__everything__echo` (server running), median of {rounds}"
        ),
        ms(mcp),
        "—".into(),
    ));
    rows.push((
        "what an MCP tool adds to an agent's step (the daemon's tool path)".into(),
        ms(mcp.saturating_sub(noop)),
        "< 5 ms".into(),
    ));

    let (bare, ours) = round_trips(calls).await;
    let overhead = ours.saturating_sub(bare);
    rows.push((
        format!("MCP stdio call (server-everything `echo`), bare pipe, median of {calls}"),
        ms(bare),
        "— (the server's own time)".into(),
    ));
    rows.push((
        format!("MCP stdio call through the daemon's client, in process, median of {calls}"),
        ms(ours),
        "—".into(),
    ));
    rows.push((
        "MCP stdio call: the client's overhead over the bare pipe (in process)".into(),
        ms(overhead),
        "< 5 ms".into(),
    ));
    for (name, command) in [
        ("server-everything (node)", mcp_servers::everything()),
        ("mcp-server-time (python)", mcp_servers::time()),
    ] {
        let cold = cold_start(&command, starts).await;
        rows.push((
            format!("MCP cold start: spawn + initialize + tools/list, {name}, median of {starts}"),
            ms(cold),
            "report".into(),
        ));
    }
    let (cached, page) = web_fetch(calls, if quick() { 3 } else { 15 }).await;
    rows.push((
        format!("`web_fetch` of a cached URL, median of {calls}"),
        ms(cached),
        "< 1 ms".into(),
    ));
    rows.push((
        "`web_fetch` of a 1 MB local HTML page (GET + HTML to text), median".into(),
        ms(page),
        "report".into(),
    ));

    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

fn everything_config() -> ServerConfig {
    ServerConfig {
        command: Some(mcp_servers::everything()),
        ..Default::default()
    }
}

/// (bare pipe median, through `lazyboyd::mcp` median) for `echo`.
async fn round_trips(calls: usize) -> (Duration, Duration) {
    // The bare pipe: JSON lines written and read by hand, nothing else.
    let mut child = tokio::process::Command::new(mcp_servers::everything())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |message: Value| {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}),
    )
    .await;
    let mut read_reply = async |id: u64| loop {
        let line = stdout.next_line().await.unwrap().unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    };
    read_reply(0).await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let mut bare = Vec::new();
    for id in 1..=calls as u64 {
        let started = Instant::now();
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "ping"}}}))
        .await;
        let reply = read_reply(id).await;
        bare.push(started.elapsed());
        assert!(
            reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("ping")
        );
    }
    drop(child);

    let section = McpSection {
        servers: [("everything".to_owned(), everything_config())].into(),
    };
    let manager = Manager::new(&section);
    let server = manager.get("everything").unwrap().clone();
    server.tools().await.unwrap();
    let cancel = CancellationToken::new();
    let mut ours = Vec::new();
    for _ in 0..calls {
        let started = Instant::now();
        let result = server
            .call_with("echo", json!({"message": "ping"}), None, &cancel)
            .await
            .unwrap();
        ours.push(started.elapsed());
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("ping")
        );
    }
    manager.shutdown().await;
    (median(bare), median(ours))
}

/// Spawn + initialize + tools/list through `lazyboyd::mcp`, each time a fresh server.
async fn cold_start(command: &str, starts: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..starts {
        let section = McpSection {
            servers: [(
                "s".to_owned(),
                ServerConfig {
                    command: Some(command.to_owned()),
                    ..Default::default()
                },
            )]
            .into(),
        };
        let manager = Manager::new(&section);
        let started = Instant::now();
        let tools = manager.get("s").unwrap().tools().await.unwrap();
        times.push(started.elapsed());
        assert!(!tools.is_empty());
        manager.shutdown().await;
    }
    median(times)
}

/// (cached fetch median, uncached 1 MB page median).
async fn web_fetch(calls: usize, pages: usize) -> (Duration, Duration) {
    let mut html = String::from("<!doctype html><html><head><title>Big</title></head><body>");
    let mut n = 0;
    while html.len() < 1_000_000 {
        html.push_str(&format!(
            "<h2>Section {n}</h2><p>Paragraph {n} with <a href=\"/p/{n}\">a link</a> and some \
             <b>bold</b> words to render, repeated until the page is a megabyte.</p>"
        ));
        n += 1;
    }
    html.push_str("</body></html>");
    let html = Arc::new(html);
    let router = axum::Router::new().route(
        "/big",
        axum::routing::get(move || {
            let html = html.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "text/html")],
                    html.as_str().to_owned(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let section = WebSection {
        allow_hosts: vec![format!("127.0.0.1:{port}")],
        ..Default::default()
    };
    let web = Web::new(&section, &WebSearchSection::default()).unwrap();
    let mut uncached = Vec::new();
    for i in 0..pages {
        let started = Instant::now();
        let fetched = web
            .fetch(&format!("http://127.0.0.1:{port}/big?i={i}"))
            .await
            .unwrap();
        uncached.push(started.elapsed());
        assert!(fetched.cached.is_none() && fetched.page.text.contains("Section 1"));
    }
    let mut cached = Vec::new();
    for _ in 0..calls {
        let started = Instant::now();
        let fetched = web
            .fetch(&format!("http://127.0.0.1:{port}/big?i=0"))
            .await
            .unwrap();
        cached.push(started.elapsed());
        assert!(fetched.cached.is_some());
    }
    (median(cached), median(uncached))
}
