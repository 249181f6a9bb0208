//! Test doubles for the tools (compiled for tests only): a task scope that keeps what tools
//! record in memory, and a context over a temporary workspace on the host. Here, beside the
//! registry rather than among the handlers, because the command registry's and the spill's
//! tests use it too: a test of a lower file never reaches up into `handlers/`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use lazyboy_protocol::{EventBody, PlanStep};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::confine::machine::Host;
use crate::store::{Store, StoreError};
use crate::tools::task::{Conversation, Memory, ScopeError, SubagentView, TaskScope};
use crate::tools::{CommandRegistry, Handled, ToolContext, ToolHandler, ToolOutput};

/// A task scope that keeps what tools record in memory (no store, no subagents).
#[derive(Default)]
pub struct FakeScope {
    pub events: Mutex<Vec<EventBody>>,
    pub store: Option<Store>,
    pub agent_id: i64,
}

impl FakeScope {
    pub fn recorded(&self) -> Vec<EventBody> {
        self.events.lock().unwrap().clone()
    }
}

impl TaskScope for FakeScope {
    fn task_id(&self) -> &str {
        "task-1"
    }
    fn is_subagent(&self) -> bool {
        false
    }
    fn record(&self, body: EventBody) -> BoxFuture<'_, Result<(), StoreError>> {
        self.events.lock().unwrap().push(body);
        Box::pin(async { Ok(()) })
    }
    fn plan(&self) -> BoxFuture<'_, Result<Vec<PlanStep>, StoreError>> {
        let plan = self
            .recorded()
            .into_iter()
            .rev()
            .find_map(|e| match e {
                EventBody::PlanUpdated { steps, .. } => Some(steps),
                _ => None,
            })
            .unwrap_or_default();
        Box::pin(async move { Ok(plan) })
    }
    fn running_commands(&self) -> Vec<String> {
        Vec::new()
    }
    fn live_subagents(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn memory(&self) -> Memory {
        Memory::new(self.store.clone().unwrap(), self.agent_id)
    }
    fn conversation(&self) -> Conversation {
        Conversation::new(self.store.clone().unwrap(), self.agent_id)
    }
    fn grantable(&self, _name: &str) -> bool {
        true
    }
    fn spawn_subagent<'a>(
        &'a self,
        _objective: &'a str,
        _tools: Option<Vec<String>>,
    ) -> BoxFuture<'a, Result<String, ScopeError>> {
        Box::pin(async { Err(ScopeError::Refused("no subagents here".into())) })
    }
    fn subagent<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SubagentView, ScopeError>> {
        Box::pin(async move { Err(ScopeError::Refused(format!("{id:?} is not yours"))) })
    }
    fn message_subagent<'a>(
        &'a self,
        id: &'a str,
        _text: &'a str,
    ) -> BoxFuture<'a, Result<(), ScopeError>> {
        Box::pin(async move { Err(ScopeError::Refused(format!("{id:?} is not yours"))) })
    }
    fn stop_subagent<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, ScopeError>> {
        Box::pin(async move { Err(ScopeError::Refused(format!("{id:?} is not yours"))) })
    }
}

/// A context on a fresh, canonical workspace `<tmp>/ws`; `<tmp>/outside` exists beside it.
pub fn ctx() -> (tempfile::TempDir, ToolContext) {
    ctx_with(Arc::new(FakeScope::default()))
}

pub fn ctx_with(scope: Arc<dyn TaskScope>) -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside"), workspace.join("out")).unwrap();
    let ctx = ToolContext {
        workspace: Arc::new(crate::tools::workspace::Root::open(&workspace).unwrap()),
        task_id: "task-1".to_owned(),
        call: "call-1".to_owned(),
        call_id: "call-1".to_owned(),
        machine: Arc::new(Host::default()),
        commands: Arc::new(CommandRegistry::new()),
        scope,
        cancel: CancellationToken::new(),
    };
    (dir, ctx)
}

/// Runs a tool that answers with a result (not the end of the turn).
pub async fn call(tool: &dyn ToolHandler, ctx: &ToolContext, args: Value) -> ToolOutput {
    match crate::tools::run(tool, ctx, args).await {
        Ok(Handled::Output(output)) => output,
        other => panic!("{} did not answer with a result: {other:?}", tool.name()),
    }
}

/// Every way out of the workspace that a path argument could take.
pub const ESCAPES: [&str; 4] = ["../x", "/etc/passwd", "out/secret.txt", "out/new.txt"];

/// The first command id (`cmd-` + 12 hex digits) in a result.
pub fn command_id(text: &str) -> String {
    let at = text.find("cmd-").unwrap();
    text[at..at + 16].to_owned()
}

/// Polls `cond` until it holds or `limit` passes (for conditions with no event to await).
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}
