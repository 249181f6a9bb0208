//! Redaction's cost, in process (the daemon's own `redact` module, release build): one
//! matcher over every form of six secrets (two provider keys, the API token, a database URL
//! and its password, an MCP key), on a 1 MiB command output with and without secrets in it,
//! on the events of one steady agent step, on a streamed reply, and the matcher's rebuild.
//!
//! `cargo bench -p lazyboy-tests --bench redaction` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.

use std::hint::black_box;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lazyboy_tests::bench::{median, quick};
use lazyboyd::redact;
use serde_json::{Value, json};

const SECRETS: [(&str, &str); 5] = [
    (
        "OPENAI_API_KEY",
        "sk-proj-Zt9Qv2xK7mW4nR8pL3sJ6hF1dG5aE0cB9yU2iO7tY4wX8vN3mQ6zP1kA4bC7dE0fG3hJ6",
    ),
    (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-q8W2e4R6t8Y0u2I4o6P8a0S2d4F6g8H0j2K4l6Z8x0C2v4B6n8M0q2W4e6R8t0Y2u4I6o8P0a2S4d6F8g0H2j4K6l8Z0x2C4v6B8n0M2-AbCdEf",
    ),
    (
        "API token",
        "3f9a1c7e5b2d8046a1e9c3b7d5f20846b1a9e7c3d5f20846",
    ),
    (
        "LAZYBOY_DATABASE_URL",
        "postgres://lazy:s3cr3t-Passw0rd-9x@db.lan:5432/lazyboy",
    ),
    (
        "GITHUB_MCP_TOKEN",
        "ghp_R2d2C3poBb8Ll9Kk0Jj1Hh2Gg3Ff4Ee5Dd6Cc7",
    ),
];

fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        f();
        times.push(started.elapsed());
    }
    median(times)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// About 1 MiB of what commands print: build logs, words and paths, 60-100 byte lines.
fn output() -> String {
    let mut out = String::with_capacity(1 << 20);
    let mut i = 0u64;
    while out.len() < (1 << 20) {
        out.push_str(&format!(
            "   Compiling crate-{i} v0.{}.{} (/home/me/src/project/crates/crate-{i})\n",
            i % 17,
            i % 5
        ));
        out.push_str(&format!(
            "test module_{i}::it_works_{} ... ok\n",
            i * 7 % 1000
        ));
        i += 1;
    }
    out.truncate(1 << 20);
    out
}

fn main() {
    let reps = if quick() { 5 } else { 31 };
    let mut rows: Vec<(String, String)> = Vec::new();

    let started = Instant::now();
    for (name, value) in SECRETS {
        redact::register(name, value);
    }
    let took = started.elapsed();
    rows.push((
        "registering the 5 secrets (6 with the URL's password): 5 matcher builds, total / each"
            .into(),
        format!("{} / {}", ms(took), ms(took / 5)),
    ));

    let clean = output();
    let mib = clean.len() as f64 / (1 << 20) as f64;
    let took = time(reps, || {
        black_box(redact::text(black_box(&clean)));
    });
    rows.push((
        format!("1 MiB command output, no secret in it ({mib:.2} MiB)"),
        format!("{} ({:.0} MiB/s)", ms(took), mib / took.as_secs_f64()),
    ));

    let mut dirty = clean.clone();
    let key = SECRETS[0].1;
    let (a, b) = key.split_at(30);
    for (i, leak) in [
        key.to_owned(),
        STANDARD.encode(key),
        format!("{a}\n{b}"),
        STANDARD.encode(format!("Bearer {key}")),
    ]
    .iter()
    .cycle()
    .take(16)
    .enumerate()
    {
        let at = (i + 1) * (dirty.len() / 18);
        let at = (at..dirty.len())
            .find(|&j| dirty.is_char_boundary(j))
            .unwrap();
        dirty.insert_str(at, &format!(" {leak} "));
    }
    let took = time(reps, || {
        black_box(redact::text(black_box(&dirty)));
    });
    assert!(!redact::text(&dirty).contains(key));
    rows.push((
        "1 MiB command output with 16 copies (plain, base64, split, embedded)".into(),
        ms(took),
    ));

    let event = json!({"call_id": "c1", "name": "exec_command", "status": "ok",
                       "output": clean, "progress": false});
    let took = time(reps, || {
        let mut data = event.clone();
        redact::json(black_box(&mut data));
        black_box(data);
    });
    let copy = time(reps, || {
        black_box(event.clone());
    });
    rows.push((
        "the 1 MiB result as the store redacts it (`redact::json` on its event; the copy \
         alone)"
            .into(),
        format!("{} ({} of it the copy)", ms(took), ms(copy)),
    ));

    // What one steady agent step records: the reply with its call, the intent, the result,
    // the usage, a few deltas.
    let step: Vec<Value> = vec![
        json!({"text": "", "tool_calls": [{"id": "s7", "name": "exec_command",
               "arguments": "{\"cmd\":\"echo step 7 >> out.txt\"}"}]}),
        json!({"call_id": "s7", "name": "exec_command",
               "arguments": "{\"cmd\":\"echo step 7 >> out.txt\"}", "effect": "command"}),
        json!({"call_id": "s7", "name": "exec_command", "status": "ok",
               "output": "s7 exited 0\n(no output)", "progress": false}),
        json!({"model": "mock-model", "input_tokens": 5525, "cached_tokens": 0,
               "output_tokens": 53, "estimated": false}),
        json!({"text": "Appending "}),
        json!({"text": "step 7 "}),
        json!({"text": "now."}),
    ];
    let took = time(reps * 30, || {
        for body in &step {
            let mut data = body.clone();
            redact::json(&mut data);
            black_box(data);
        }
    });
    rows.push(("one steady agent step's 7 events".into(), us(took)));

    let reply: Vec<String> = (0..200).map(|i| format!("word{i} ")).collect();
    let took = time(reps * 10, || {
        let mut stream = redact::Stream::new();
        for piece in &reply {
            black_box(stream.push(piece));
        }
        black_box(stream.finish());
    });
    rows.push((
        "a streamed reply of 200 deltas (1.4 KB) through `redact::Stream`".into(),
        format!(
            "{} ({:.2} µs per delta)",
            us(took),
            took.as_secs_f64() * 1e6 / 200.0
        ),
    ));

    println!("| measure (6 secrets, every form) | median of {reps} |\n|---|---|");
    for (what, result) in rows {
        println!("| {what} | {result} |");
    }
}
