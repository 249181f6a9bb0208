//! Box benchmarks, against the real engine and image: cold start (create → CDP answers),
//! `box_shell true`, `screenshot`, `browser_snapshot` of a 1,000-element page,
//! `browser_click` → the next snapshot, and a person's takeover: `/novnc/websockify` opened
//! until the first RFB bytes (the VNC server's greeting) arrive. Tool times are the daemon's own, from each call's
//! `tool_call` to its `tool_result` event (model round trips excluded).
//!
//! `cargo bench -p lazyboy-tests --bench box` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.

use std::time::{Duration, Instant};

use lazyboy_protocol::Event;
use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::boxes::{SITE, TestBox, daemon};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{all_events, create_task};
use serde_json::json;

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// Each call's duration (tool_call → tool_result), by call id.
fn durations(events: &[Event]) -> std::collections::HashMap<String, Duration> {
    let mut started = std::collections::HashMap::new();
    let mut out = std::collections::HashMap::new();
    for event in events {
        let id = event.data["call_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match event.kind.as_str() {
            "tool_call" => {
                started.insert(id, event.at_ms);
            }
            "tool_result" => {
                if let Some(at) = started.get(&id) {
                    let took = u64::try_from(event.at_ms - at).unwrap_or(0);
                    out.insert(id, Duration::from_millis(took));
                }
            }
            _ => {}
        }
    }
    out
}

async fn run() {
    let reps = if quick() { 3 } else { 15 };
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;

    let mut starts = Vec::new();
    for _ in 0..if quick() { 1 } else { 3 } {
        let _ = std::process::Command::new("docker")
            .args(["rm", "-f", &test_box.name])
            .output();
        let started = Instant::now();
        let response = daemon
            .http
            .post(daemon.url("/api/box/start"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        starts.push(started.elapsed());
    }
    test_box.serve().await;

    let mut greetings = Vec::new();
    for _ in 0..if quick() { 2 } else { 5 } {
        greetings.push(rfb_greeting(&daemon).await);
    }

    let mut calls = Vec::new();
    for i in 0..reps {
        // Numbered (`true` ignores its arguments): identical calls with identical results in
        // a row would (rightly) trip the loop fuse.
        calls.push((
            format!("sh{i}"),
            "box_shell",
            json!({"command": format!("true {i}")}),
        ));
    }
    for i in 0..reps {
        calls.push((format!("ss{i}"), "screenshot", json!({})));
    }
    for i in 0..reps {
        let url = format!("{SITE}/many?n=1000");
        calls.push((format!("nv{i}"), "browser_navigate", json!({"url": url})));
        calls.push((format!("sn{i}"), "browser_snapshot", json!({})));
        calls.push((format!("ck{i}"), "browser_click", json!({"ref": 2})));
        calls.push((format!("sk{i}"), "browser_snapshot", json!({})));
    }
    for (id, name, args) in &calls {
        mock.push(Reply::tool_call(id.clone(), *name, args.clone()));
    }
    mock.push(Reply::text("done"));
    let task = create_task(&daemon, "default", "bench the box", None).await;
    lazyboy_tests::boxes::wait_finished(&daemon, &task).await;
    let events: Vec<Event> = all_events(&daemon, 0)
        .await
        .into_iter()
        .filter(|e| e.task.as_deref() == Some(task.as_str()))
        .collect();
    let took = durations(&events);
    let series = |prefix: &str| -> Vec<Duration> {
        (0..reps).map(|i| took[&format!("{prefix}{i}")]).collect()
    };
    let snapshot = series("sn");
    let click_then: Vec<Duration> = (0..reps)
        .map(|i| took[&format!("ck{i}")] + took[&format!("sk{i}")])
        .collect();
    let snapshot_text = events
        .iter()
        .find(|e| e.kind == "tool_result" && e.data["call_id"] == "sn0")
        .and_then(|e| e.data["output"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        snapshot_text.contains("1000 refs"),
        "{}",
        &snapshot_text[..200.min(snapshot_text.len())]
    );

    println!("| measure | median | target |");
    println!("|---|---|---|");
    println!(
        "| box cold start (create → CDP answers) | {} | < 5 s |",
        ms(median(starts))
    );
    println!(
        "| `box_shell` `true` round trip | {} | < 150 ms |",
        ms(median(series("sh")))
    );
    println!(
        "| `screenshot` (desktop PNG) | {} | < 500 ms |",
        ms(median(series("ss")))
    );
    println!(
        "| `browser_snapshot`, 1,000-element page | {} | < 300 ms |",
        ms(median(snapshot))
    );
    println!(
        "| `browser_click` → next `browser_snapshot` | {} | < 250 ms |",
        ms(median(click_then))
    );
    println!(
        "| takeover: `/novnc/websockify` → RFB greeting | {} | < 1 s |",
        ms(median(greetings))
    );
    mock.assert_clean();
    daemon.stop();
}

/// How long from opening the desktop's websocket to the VNC server's first bytes.
async fn rfb_greeting(daemon: &lazyboy_tests::TestDaemon) -> Duration {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let url = daemon.url("/novnc/websockify").replace("http://", "ws://");
    let mut request = url.into_client_request().unwrap();
    let protocol = "binary".parse().unwrap();
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", protocol);
    let bearer = format!("Bearer {}", daemon.token()).parse().unwrap();
    request.headers_mut().insert("Authorization", bearer);
    let started = Instant::now();
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let first = ws.next().await.unwrap().unwrap();
    let took = started.elapsed();
    assert!(first.into_data().starts_with(b"RFB 003."));
    took
}
