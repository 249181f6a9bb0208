//! Agent loop benchmarks: harness overhead per step and delta-to-print latency, with the
//! release daemon and CLI against the mock model at zero latency; once with a daemon that
//! knows no secret, once with one that knows three (redaction's share of a step).
//!
//! `cargo bench -p lazyboy-tests --bench agent` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use lazyboy_tests::bench::{self, median, quick, status_kib};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, bin};
use serde_json::json;

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Secrets a daemon holds in practice: two providers' keys and LazyBoy's own (the API token
/// is left out: the CLI reads it from the home, and a `LAZYBOY_TOKEN` would differ).
const SECRETS: [(&str, &str); 3] = [
    (
        "OPENAI_API_KEY",
        "sk-proj-Zt9Qv2xK7mW4nR8pL3sJ6hF1dG5aE0cB9yU2iO7tY4wX8vN3mQ6zP1kA4bC7dE0fG3hJ6",
    ),
    (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-q8W2e4R6t8Y0u2I4o6P8a0S2d4F6g8H0j2K4l6Z8x0C2v4B6n8M0q2W4e6R8t0Y2u4I6o8P0",
    ),
    (
        "LAZYBOY_API_KEY",
        "lb-key-R2d2C3poBb8Ll9Kk0Jj1Hh2Gg3Ff4Ee5Dd6Cc7",
    ),
];

async fn run() {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    // The same runs on a daemon that knows no secret and on one that knows three: what
    // redaction (every event through the matcher, deltas held back) adds to a step.
    for (env, what) in [(&[][..], ""), (&SECRETS[..], ", 3 secrets known")] {
        rows.extend(measure(env, what).await);
    }
    println!("| measure | result | target (peers) |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

async fn measure(env: &[(&str, &str)], what: &str) -> Vec<(String, String, String)> {
    let reps = if quick() { 2 } else { 7 };
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", env).await;
    let mut rows: Vec<(String, String, String)> = Vec::new();

    let mut medians = Vec::new();
    let mut cli_peak_kib = 0;
    for steps in [10usize, 50] {
        let mut times = Vec::new();
        for _ in 0..reps {
            let ws = tempfile::tempdir().unwrap();
            for i in 0..steps {
                mock.push(Reply::tool_call(
                    format!("s{i}"),
                    "exec_command",
                    // Numbered: six identical calls with identical results would (rightly)
                    // trip the loop fuse.
                    json!({"cmd": format!("echo step {i} >> out.txt")}),
                ));
            }
            // A task that worked tells the person (else the runtime reminds it once, and
            // that extra round would take the next run's reply).
            mock.push(Reply::tool_call(
                "m",
                "send_message",
                json!({"text": "done"}),
            ));
            mock.push(Reply::text("done"));
            fresh_conversation(&daemon).await;
            let (took, peak) = run_cli(&daemon, ws.path()).await;
            cli_peak_kib = cli_peak_kib.max(peak);
            let lines = std::fs::read_to_string(ws.path().join("out.txt")).unwrap();
            if lines.lines().count() != steps {
                let events = lazyboy_tests::all_events(&daemon, 0).await;
                for e in events
                    .iter()
                    .rev()
                    .filter(|e| e.kind != "assistant_delta")
                    .take(12)
                {
                    eprintln!("{} {} {}", e.seq, e.kind, e.data);
                }
                panic!("{} of {steps} steps ran:\n{lines}", lines.lines().count());
            }
            times.push(took);
        }
        let median = median(times);
        medians.push(median);
        let target = if steps == 10 {
            "< 300 ms (Codex CLI 1.13 s, OpenCode 3.62 s)"
        } else {
            "— (Codex CLI 3.58 s, OpenCode 7.13 s)"
        };
        rows.push((
            format!("`lazyboy run`, {steps} steps, wall time (median of {reps})"),
            ms(median),
            target.into(),
        ));
    }
    let per_step = (medians[1] - medians[0]) / 40;
    rows.push((
        "per steady step ((t50 − t10) / 40)".into(),
        ms(per_step),
        "< 10 ms (Codex CLI ≈ 70 ms)".into(),
    ));
    rows.push((
        "daemon peak RSS (VmHWM, whole run)".into(),
        format!(
            "{:.1} MiB",
            status_kib(daemon.pid(), "VmHWM").unwrap() as f64 / 1024.0
        ),
        "< 40 MiB (Codex CLI 155 MiB, OpenCode 629 MiB)".into(),
    ));
    rows.push((
        "CLI peak RSS (max over runs)".into(),
        format!("{:.1} MiB", cli_peak_kib as f64 / 1024.0),
        "< 40 MiB".into(),
    ));

    // First streamed delta → printed by `lazyboy run`.
    let mut latencies = Vec::new();
    for i in 0..reps * 3 {
        let ws = tempfile::tempdir().unwrap();
        let marker = format!("FIRST{i}");
        mock.push(Reply::text(format!("{marker} and the rest of it")));
        fresh_conversation(&daemon).await;
        let before = mock.request_count();
        let mut command = daemon.cli();
        command
            .args(["run", "say something", "--workspace"])
            .arg(ws.path())
            .stdout(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let printed = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut seen = None;
            let mut buf = Vec::new();
            // Deltas are printed without a newline: read byte chunks, not lines.
            loop {
                let chunk = reader.fill_buf().unwrap().to_vec();
                if chunk.is_empty() {
                    break;
                }
                reader.consume(chunk.len());
                buf.extend_from_slice(&chunk);
                if seen.is_none() && String::from_utf8_lossy(&buf).contains("FIRST") {
                    seen = Some(Instant::now());
                }
            }
            if seen.is_none() {
                eprintln!("`lazyboy run` printed:\n{}", String::from_utf8_lossy(&buf));
            }
            seen
        });
        let requested = mock.wait_for_requests(before + 1).await[before].received_at;
        let printed = tokio::task::spawn_blocking(move || printed.join().unwrap())
            .await
            .unwrap()
            .unwrap();
        child.wait().unwrap();
        latencies.push(printed.saturating_duration_since(requested));
    }
    rows.push((
        format!(
            "mock's first delta → printed by `lazyboy run` (median of {})",
            latencies.len()
        ),
        ms(median(latencies)),
        "< 5 ms".into(),
    ));
    daemon.stop();
    rows.into_iter()
        .map(|(measure, result, target)| (format!("{measure}{what}"), result, target))
        .collect()
}

/// Runs `lazyboy run` to completion; returns its wall time and peak RSS (KiB).
/// Starts a new generation of the default agent's conversation (outside the timed part):
/// each run is a first task, as before agents kept a conversation. Otherwise the runs' growing
/// conversation would start a background summary pass, whose model request would take a
/// scripted reply meant for the next run.
async fn fresh_conversation(daemon: &TestDaemon) {
    let cleared = daemon
        .http
        .post(daemon.url("/api/agents/default/clear"))
        .send()
        .await
        .unwrap();
    assert!(cleared.status().is_success(), "{}", cleared.status());
}

async fn run_cli(daemon: &TestDaemon, workspace: &std::path::Path) -> (Duration, u64) {
    let mut command = std::process::Command::new(bin("lazyboy"));
    command
        .env("LAZYBOY_HOME", daemon.home())
        .args(["run", "append steps", "--workspace"])
        .arg(workspace)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut child = command.spawn().unwrap();
        let pid = child.id();
        let mut peak = 0;
        // Sample the CLI's high-water mark until it exits.
        loop {
            peak = peak.max(status_kib(pid, "VmHWM").unwrap_or(0));
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                return (started.elapsed(), peak);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    })
    .await
    .unwrap()
}
