//! Dashboard benchmarks: the release daemon and a real headless Chromium (1280x800).
//!
//! `cargo bench -p lazyboy-tests --bench dashboard` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for a smoke run.
//!
//! - *Load to agents visible, 100k events*: the page's own `lb:agents-visible` mark
//!   (`performance.mark` when the board first shows agents), from navigation start. Cold: no
//!   HTTP cache and no service worker (both cleared before each load); warm: a reload with
//!   both.
//! - *Bytes on first load*: Resource Timing of a cold load (the page, its modules, icons, the
//!   state and the first conversation page), on the wire and decoded.
//! - *Message posted → bubble visible*: inside the page, from just before `fetch` posts a note
//!   (`POST /api/agents/bench/messages`, `note: true`) to the animation frame after its bubble
//!   entered the DOM (a MutationObserver), one message at a time.
//! - *DOM nodes after an hour of 5 events/s*: 18,000 notes (each one conversation item, the
//!   worst case) posted as fast as the daemon takes them into the open conversation; the
//!   page's element count and JS heap afterwards.

use std::time::Duration;

use lazyboy_tests::bench::{self, quick};
use lazyboy_tests::browser::{Browser, SIZES};
use lazyboy_tests::{TestDaemon, add_agent, post_message, temp_home};
use serde_json::{Value, json};

fn main() {
    bench::runtime().block_on(run());
}

type Row = (String, String, String);

async fn run() {
    let mut rows: Vec<Row> = Vec::new();
    let home = temp_home();
    let events = 100_000;
    lazyboy_tests::history::fill(home.path(), "busy", events).await;
    let daemon = TestDaemon::start_in(home.path(), &[]).await;
    add_agent(&daemon, "bench").await;
    let browser = Browser::start().await;
    browser.set_viewport(SIZES[1]).await;
    load(&browser, &daemon, &mut rows).await;
    latency(&browser, &daemon, &mut rows).await;
    dom_bound(&browser, &daemon, &mut rows).await;
    browser.close().await;
    daemon.stop();

    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index]
}

async fn agents_visible(browser: &Browser) -> f64 {
    browser
        .wait_js(
            "the agents",
            "const mark = performance.getEntriesByName('lb:agents-visible')[0];
             return mark && document.querySelector('nav button.agent[data-name=busy]') ? mark.startTime : null",
        )
        .await
        .as_f64()
        .unwrap()
}

async fn load(browser: &Browser, daemon: &TestDaemon, rows: &mut Vec<Row>) {
    let runs = if quick() { 3 } else { 15 };
    let url = daemon.url("/");
    browser.cdp("Network.enable", json!({})).await;
    let mut cold = Vec::new();
    let mut bytes = None;
    for _ in 0..runs {
        browser.goto(&url).await;
        browser
            .client
            .execute_async(
                "const done = arguments[0];
                 Promise.all([navigator.serviceWorker.getRegistrations().then((rs) => Promise.all(rs.map((r) => r.unregister()))),
                              caches.keys().then((ks) => Promise.all(ks.map((k) => caches.delete(k))))]).then(() => done(true));",
                vec![],
            )
            .await
            .unwrap();
        browser.cdp("Network.clearBrowserCache", json!({})).await;
        browser.goto("about:blank").await;
        browser.goto(&url).await;
        cold.push(agents_visible(browser).await);
        if bytes.is_none() {
            // Let the first conversation-less load settle, then read what came over the wire.
            tokio::time::sleep(Duration::from_millis(500)).await;
            bytes = Some(
                browser
                    .eval(
                        "const entries = [performance.getEntriesByType('navigation')[0],
                                          ...performance.getEntriesByType('resource')];
                         const sum = (f, keep) => entries.filter(keep).reduce((n, e) => n + e[f], 0);
                         const page = (e) => !e.name.includes('/api/');
                         return { wire: sum('transferSize', page), decoded: sum('decodedBodySize', page),
                                  api_wire: sum('transferSize', (e) => !page(e)), files: entries.filter(page).length }",
                        vec![],
                    )
                    .await,
            );
        }
    }
    let mut warm = Vec::new();
    for _ in 0..runs {
        browser.client.refresh().await.unwrap();
        warm.push(agents_visible(browser).await);
    }
    let (p50c, maxc) = (percentile(&mut cold, 0.5), percentile(&mut cold, 1.0));
    let p50w = percentile(&mut warm, 0.5);
    rows.push((
        format!(
            "load → agents visible, 100k events, cold (no cache, no worker), p50 / max of {runs}"
        ),
        format!("{p50c:.0} ms / {maxc:.0} ms"),
        "< 1 s".into(),
    ));
    rows.push((
        format!("load → agents visible, 100k events, warm (cache and worker), p50 of {runs}"),
        format!("{p50w:.0} ms"),
        "< 1 s".into(),
    ));
    let bytes: Value = bytes.unwrap();
    rows.push((
        format!(
            "bytes on first load: the page ({} files), decoded / on the wire (gzip)",
            bytes["files"]
        ),
        format!(
            "{:.1} KB / {:.1} KB (+ {:.1} KB of API answers on the wire)",
            bytes["decoded"].as_f64().unwrap() / 1024.0,
            bytes["wire"].as_f64().unwrap() / 1024.0,
            bytes["api_wire"].as_f64().unwrap() / 1024.0
        ),
        "< 150 KB".into(),
    ));
}

async fn open_bench(browser: &Browser, daemon: &TestDaemon) {
    browser.goto(&daemon.url("/")).await;
    browser
        .click("//nav[@aria-label='Agents']//button[@data-name='bench']")
        .await;
    browser
        .wait_js(
            "the bench conversation",
            "return document.querySelector('[role=log] .items') !== null
               && document.querySelector('lb-connection').dataset.status === 'live'",
        )
        .await;
}

const POST_AND_WAIT: &str = r#"
const [count, prefix, gap, done] = arguments;
const log = document.querySelector('[role=log]');
const times = [];
(async () => {
  for (let i = 0; i < count; i++) {
    await new Promise((r) => setTimeout(r, gap));
    const text = `${prefix}${i}`;
    const seen = new Promise((resolve) => {
      const observer = new MutationObserver(() => {
        const last = log.querySelector('.items').lastElementChild;
        if (last && last.textContent.startsWith(text)) { observer.disconnect(); resolve(); }
      });
      observer.observe(log, { childList: true, subtree: true });
    });
    const t0 = performance.now();
    let answered = 0;
    const posted = fetch('/api/agents/bench/messages', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text, note: true }) }).then(() => { answered = performance.now() - t0; });
    await seen;
    const inDom = performance.now() - t0;
    await new Promise((r) => requestAnimationFrame(() => r()));
    times.push([performance.now() - t0, inDom, answered]);
    await posted;
  }
  done(times);
})();
"#;

async fn latency(browser: &Browser, daemon: &TestDaemon, rows: &mut Vec<Row>) {
    open_bench(browser, daemon).await;
    let batches = if quick() { 1 } else { 6 };
    // As a person posts (the page batches what arrives within 120 ms of its last render,
    // so spaced messages each render at once), then back to back (each waits for a batch).
    for (gap, how) in [(150, "150 ms apart"), (0, "back to back")] {
        let mut times = Vec::new();
        for batch in 0..batches {
            let value = browser
                .client
                .execute_async(
                    POST_AND_WAIT,
                    vec![json!(50), json!(format!("lat{gap}-{batch}-")), json!(gap)],
                )
                .await
                .unwrap();
            times.extend(value.as_array().unwrap().iter().map(|t| {
                let t = t.as_array().unwrap();
                [0, 1, 2].map(|i| t[i].as_f64().unwrap())
            }));
        }
        // The first few warm the connection and the page's code paths.
        let steady = times.split_off(5.min(times.len()));
        let n = steady.len();
        let column = |i: usize| steady.iter().map(|t| t[i]).collect::<Vec<f64>>();
        let (mut shown, mut dom, mut answered) = (column(0), column(1), column(2));
        rows.push((
            format!(
                "message posted → bubble visible, {how}, p50 / p99 ({n} notes; p50 of the \
                 POST's answer {:.1} ms, of the bubble in the DOM {:.1} ms)",
                percentile(&mut answered, 0.5),
                percentile(&mut dom, 0.5)
            ),
            format!(
                "{:.1} ms / {:.1} ms",
                percentile(&mut shown, 0.5),
                percentile(&mut shown, 0.99)
            ),
            "< 50 ms / < 200 ms".into(),
        ));
    }
}

async fn dom_bound(browser: &Browser, daemon: &TestDaemon, rows: &mut Vec<Row>) {
    open_bench(browser, daemon).await;
    let before = dom_count(browser).await;
    let total = if quick() { 3_000 } else { 18_000 };
    let base = daemon.url("");
    // Eight writers, as many notes each.
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let http = daemon.http.clone();
            let base = base.clone();
            tokio::spawn(async move {
                for i in (w..total).step_by(8) {
                    post_message(&http, &base, "bench", &format!("hour {i}"))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let state: lazyboy_protocol::DashboardState = daemon.client().get("/api/state").await.unwrap();
    let last = state.seq;
    browser
        .wait_js(
            "the burst to be shown",
            &format!(
                "const items = [...document.querySelectorAll('[role=log] .items > *')];
                 return items.length && Number(items[items.length - 1].dataset.seq) === {last}"
            ),
        )
        .await;
    let after = dom_count(browser).await;
    rows.push((
        format!("DOM after {total} events into one conversation (an hour at 5/s): elements / items / JS heap"),
        format!(
            "{} / {} / {:.1} MiB (before: {} / {} / {:.1} MiB)",
            after["nodes"],
            after["items"],
            after["heap"].as_f64().unwrap() / 1048576.0,
            before["nodes"],
            before["items"],
            before["heap"].as_f64().unwrap() / 1048576.0
        ),
        "bounded".into(),
    ));
}

async fn dom_count(browser: &Browser) -> Value {
    browser
        .eval(
            "return { nodes: document.getElementsByTagName('*').length,
                      items: document.querySelectorAll('[role=log] .items > *').length,
                      heap: performance.memory ? performance.memory.usedJSHeapSize : 0 }",
            vec![],
        )
        .await
}
