//! File tool micro-bench: what one `read_file` and one `write_file` call cost in the daemon's
//! own code (argument parsing, the path opened in the workspace, the IO, the result text),
//! without the model round or the event log around it. Run before and after a change to how
//! workspace paths are opened (issue 21: beneath a directory fd, never canonicalize-then-open).
//!
//! `cargo bench -p lazyboy-tests --bench files` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use lazyboy_protocol::{EventBody, PlanStep};
use lazyboy_tests::bench::{self, median, quick};
use lazyboyd::confine::machine::Host;
use lazyboyd::store::StoreError;
use lazyboyd::tools::task::{Conversation, Memory, ScopeError, SubagentView, TaskScope};
use lazyboyd::tools::{CommandRegistry, Handled, Registry, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A task that records nothing: the bench measures the tool, not the store.
struct Quiet;

impl TaskScope for Quiet {
    fn task_id(&self) -> &str {
        "bench"
    }
    fn is_subagent(&self) -> bool {
        false
    }
    fn record(&self, _body: EventBody) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
    fn plan(&self) -> BoxFuture<'_, Result<Vec<PlanStep>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn running_commands(&self) -> Vec<String> {
        Vec::new()
    }
    fn live_subagents(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn memory(&self) -> Memory {
        unimplemented!("the file tools use no memory")
    }
    fn conversation(&self) -> Conversation {
        unimplemented!("the file tools read no conversation")
    }
    fn grantable(&self, _name: &str) -> bool {
        false
    }
    fn spawn_subagent<'a>(
        &'a self,
        _objective: &'a str,
        _tools: Option<Vec<String>>,
    ) -> BoxFuture<'a, Result<String, ScopeError>> {
        Box::pin(async { Err(ScopeError::Refused("none".into())) })
    }
    fn subagent<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, Result<SubagentView, ScopeError>> {
        Box::pin(async { Err(ScopeError::Refused("none".into())) })
    }
    fn message_subagent<'a>(
        &'a self,
        _id: &'a str,
        _text: &'a str,
    ) -> BoxFuture<'a, Result<(), ScopeError>> {
        Box::pin(async { Err(ScopeError::Refused("none".into())) })
    }
    fn stop_subagent<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, Result<bool, ScopeError>> {
        Box::pin(async { Err(ScopeError::Refused("none".into())) })
    }
}

fn context(workspace: &std::path::Path) -> ToolContext {
    ToolContext {
        workspace: lazyboyd_workspace(workspace),
        task_id: "bench".to_owned(),
        call: "c".to_owned(),
        call_id: "bench-c".to_owned(),
        machine: Arc::new(Host::default()),
        commands: Arc::new(CommandRegistry::new()),
        scope: Arc::new(Quiet),
        cancel: CancellationToken::new(),
    }
}

/// The workspace as the tools get it.
fn lazyboyd_workspace(path: &std::path::Path) -> Arc<lazyboyd::tools::workspace::Root> {
    Arc::new(lazyboyd::tools::workspace::Root::open(path).unwrap())
}

/// Median wall time of one call of `tool` with `args`, over `calls` calls (after a warm-up),
/// and the process's CPU time per call (the figure that holds on a busy machine).
async fn time(
    registry: &Registry,
    ctx: &ToolContext,
    tool: &str,
    args: Value,
    calls: usize,
) -> (Duration, Duration) {
    let tool = registry.get(tool).unwrap().clone();
    let mut times = Vec::with_capacity(calls);
    let mut cpu_from = 0;
    for i in 0..calls + 50 {
        if i == 50 {
            cpu_from = bench::cpu_ticks(std::process::id());
        }
        let started = Instant::now();
        let out = lazyboyd::tools::run(tool.as_ref(), ctx, args.clone())
            .await
            .unwrap();
        let took = started.elapsed();
        match out {
            Handled::Output(out) => assert!(!out.is_error, "{}", out.text),
            other => panic!("{other:?}"),
        }
        if i >= 50 {
            times.push(took);
        }
    }
    let ticks = bench::cpu_ticks(std::process::id()) - cpu_from;
    let cpu = Duration::from_millis(ticks * 10) / u32::try_from(calls).unwrap();
    (median(times), cpu)
}

fn us((wall, cpu): (Duration, Duration)) -> String {
    format!(
        "{:.1} µs | {:.1} µs",
        wall.as_secs_f64() * 1e6,
        cpu.as_secs_f64() * 1e6
    )
}

async fn run() {
    let calls = if quick() { 200 } else { 3000 };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("src/deep")).unwrap();
    let text: String = (0..100)
        .map(|i| format!("line {i} of a small source file\n"))
        .collect();
    std::fs::write(ws.join("src/deep/a.rs"), &text).unwrap();
    let ctx = context(&ws);
    let registry = Registry::standard();
    let read = time(
        &registry,
        &ctx,
        "read_file",
        json!({"path": "src/deep/a.rs"}),
        calls,
    )
    .await;
    let write = time(
        &registry,
        &ctx,
        "write_file",
        json!({"path": "src/deep/b.rs", "content": text}),
        calls,
    )
    .await;
    let list = time(
        &registry,
        &ctx,
        "list_dir",
        json!({"path": "src", "depth": 2}),
        calls,
    )
    .await;
    println!("| measure | wall, median of {calls} calls | CPU per call |");
    println!("|---|---|---|");
    println!(
        "| read_file, 100 lines (3.3 KB), two directories deep | {} |",
        us(read)
    );
    println!("| write_file, same size, replacing | {} |", us(write));
    println!("| list_dir, depth 2 | {} |", us(list));
}

fn main() {
    bench::runtime().block_on(run());
}
