//! One file per tool, plus the helpers they share: argument parsing (a bad argument is a
//! result for the model that shows the expected schema), paths judged by the workspace
//! ([`workspace::Root::rel`], then opened beneath its fd by the handler), and command lookup
//! confined to the calling task. Each fails with the error result itself, so a handler
//! passes it on with `?` (see [`ToolOutcome`](super::ToolOutcome)).

pub mod ask;
mod await_command;
mod box_common;
mod box_files;
pub mod box_help;
mod box_shell;
mod browser;
mod browser_more;
mod computer;
mod conversation;
mod edit_file;
mod exec_command;
mod kill_command;
mod list_dir;
pub mod memory;
pub mod message;
pub mod plan;
mod read_file;
pub mod report;
mod screenshot;
mod search;
pub mod subagents;
pub mod web_fetch;
pub mod web_search;
mod write_file;
mod write_stdin;

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::commands::Command;
use super::{Effect, ToolContext, ToolHandler, ToolOutput, workspace};

/// Every standard tool: one line per tool registers it.
pub fn all() -> Vec<Arc<dyn ToolHandler>> {
    vec![
        // The workspace, on the host.
        Arc::new(read_file::ReadFile),
        Arc::new(write_file::WriteFile),
        Arc::new(edit_file::EditFile),
        Arc::new(list_dir::ListDir),
        Arc::new(search::Search),
        // Commands, on the host.
        Arc::new(exec_command::ExecCommand),
        Arc::new(write_stdin::WriteStdin),
        Arc::new(await_command::AwaitCommand),
        Arc::new(kill_command::KillCommand),
        // The task itself.
        Arc::new(plan::UpdatePlan),
        Arc::new(message::SendMessage),
        Arc::new(message::ReportProgress),
        Arc::new(report::ReportDone),
        Arc::new(report::ReportBlocked),
        // The person.
        Arc::new(ask::RequestUserInput),
        Arc::new(ask::RequestTakeover),
        // The agent's memory.
        Arc::new(memory::MemoryWrite),
        Arc::new(memory::MemorySearch),
        Arc::new(memory::MemoryForget),
        Arc::new(conversation::ReadConversation),
        // Subagents.
        Arc::new(subagents::Spawn),
        Arc::new(subagents::Check),
        Arc::new(subagents::Message),
        Arc::new(subagents::Stop),
    ]
}

/// The web tools, which share the daemon's web client: `web_fetch` always, `web_search`
/// when a provider is configured. A subagent limited to `allowed` tools gets only those.
pub fn register_web(
    registry: &mut super::Registry,
    web: &Arc<crate::web::Web>,
    allowed: Option<&[String]>,
) {
    let mut tools: Vec<Arc<dyn ToolHandler>> =
        vec![Arc::new(web_fetch::WebFetch { web: web.clone() })];
    if web.search.is_some() {
        tools.push(Arc::new(web_search::WebSearch { web: web.clone() }));
    }
    for tool in tools {
        if allowed.is_none_or(|allowed| allowed.iter().any(|a| a == tool.name())) {
            registry.register(tool);
        }
    }
}

/// Registers the box's tools for `task` (always, also without Docker: then each call says
/// why, and nothing runs on the host). A `computer_use` subagent (its list names
/// `computer`) gets only `computer` and `screenshot` of them; other subagents never get
/// `request_box_help`; a subagent's `tools` list limits the rest.
pub fn register_box(
    registry: &mut super::Registry,
    sandbox: &Arc<crate::sandbox::Sandbox>,
    task: &crate::store::TaskRow,
) {
    let allowed = task.allowed_tools();
    let computer_use = allowed
        .as_ref()
        .is_some_and(|list| list.iter().any(|t| t == computer::NAME));
    let shared = Arc::new(box_common::BoxTask {
        sandbox: sandbox.clone(),
        task: task.clone(),
        computer_use,
    });
    let tools: Vec<Arc<dyn ToolHandler>> = if computer_use {
        vec![
            Arc::new(computer::Computer(shared.clone())),
            Arc::new(screenshot::Screenshot(shared)),
        ]
    } else {
        let mut tools: Vec<Arc<dyn ToolHandler>> = vec![
            Arc::new(box_shell::BoxShell(shared.clone())),
            Arc::new(box_shell::BoxAwait),
            Arc::new(box_shell::BoxKill),
            Arc::new(box_files::BoxReadFile(shared.clone())),
            Arc::new(box_files::BoxWriteFile(shared.clone())),
            Arc::new(box_files::CopyToBox(shared.clone())),
            Arc::new(box_files::CopyFromBox(shared.clone())),
            Arc::new(screenshot::Screenshot(shared.clone())),
            Arc::new(browser::Navigate(shared.clone())),
            Arc::new(browser::Snapshot(shared.clone())),
            Arc::new(browser::Click(shared.clone())),
            Arc::new(browser::Type(shared.clone())),
            Arc::new(browser_more::Wait(shared.clone())),
            Arc::new(browser_more::Screenshot(shared.clone())),
            Arc::new(browser_more::Release(shared.clone())),
        ];
        if task.parent_id.is_none() {
            tools.push(Arc::new(box_help::RequestBoxHelp(shared)));
        }
        tools
    };
    for tool in tools {
        let listed = allowed
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool.name()));
        if listed {
            registry.register(tool);
        }
    }
}

/// Tools a subagent never gets, whatever its `tools` list says: it cannot have subagents of
/// its own, and it cannot ask the person (its parent does).
pub fn withheld_from_subagents(name: &str) -> bool {
    subagents::NAMES.contains(&name) || ask::NAMES.contains(&name)
}

/// The effect of a standard tool called in a log written before calls recorded their
/// effect (`None` for a tool this build does not have).
pub fn legacy_effect(name: &str) -> Option<Effect> {
    all()
        .into_iter()
        .find(|tool| tool.name() == name)
        .map(|tool| tool.effect(&Value::Null))
}

/// `{"type":"object","properties":…,"required":…,"additionalProperties":false}`.
pub(crate) fn schema(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Parses the arguments; on failure, tells the model what went wrong and what is expected.
pub(crate) fn parse<T: DeserializeOwned>(
    tool: &dyn ToolHandler,
    args: Value,
) -> Result<T, ToolOutput> {
    serde_json::from_value(args).map_err(|error| {
        ToolOutput::error(format!(
            "invalid arguments for {}: {error}. Expected an object matching this schema: {}",
            tool.name(),
            tool.parameters()
        ))
    })
}

/// `path` judged inside the workspace (not opened yet).
fn rel(ctx: &ToolContext, path: &str) -> Result<workspace::Rel, ToolOutput> {
    ctx.workspace
        .rel(path)
        .map_err(|e| ToolOutput::error(e.to_string()))
}

/// A workspace refusal or failure, for the model.
fn path_error(error: workspace::PathError) -> ToolOutput {
    ToolOutput::error(error.to_string())
}

/// Runs blocking file work (opens, reads, walks) off the async workers, with the workspace.
async fn blocking<T: Send + 'static>(
    ctx: &ToolContext,
    work: impl FnOnce(&workspace::Root) -> Result<T, ToolOutput> + Send + 'static,
) -> Result<T, ToolOutput> {
    let root = ctx.workspace.clone();
    tokio::task::spawn_blocking(move || work(&root))
        .await
        .map_err(|e| ToolOutput::error(format!("the file operation failed: {e}")))?
}

/// Command `id`, if the calling task started it. Nobody else's: not another agent's sharing
/// the workspace (a confined agent would type into an unconfined one's shell), not the
/// parent's from a subagent (which may have been given fewer tools, `exec_command` not among
/// them) nor a subagent's from its parent (each follows its own and reports; the parent
/// hears the results from the subagent). Unknown and foreign ids get the same answer, so
/// the ids of other tasks' commands are not confirmed either.
fn command(ctx: &ToolContext, id: &str) -> Result<Arc<Command>, ToolOutput> {
    match ctx.commands.get(id) {
        Some(command) if command.task_id() == ctx.task_id => Ok(command),
        _ => {
            let running: Vec<String> = ctx
                .commands
                .running_for_task(&ctx.task_id)
                .into_iter()
                .map(|info| info.id)
                .collect();
            let known = if running.is_empty() {
                "none".to_owned()
            } else {
                running.join(", ")
            };
            Err(ToolOutput::error(format!(
                "unknown command id: {id} (your running commands: {known})"
            )))
        }
    }
}

/// `status` + log path + output, the shared shape of the command tools' results.
fn command_report(ctx: &ToolContext, command: &Command, status: &str, output: String) -> String {
    let log = command.info().log_path.display();
    let output = if output.is_empty() {
        "(no new output)".to_owned()
    } else {
        super::spill::limit(ctx, output)
    };
    format!("{status}\nlog: {log}\noutput:\n{output}")
}

#[cfg(test)]
pub(crate) mod testing {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures_util::future::BoxFuture;
    use lazyboy_protocol::{EventBody, PlanStep};
    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    use crate::store::{Store, StoreError};
    use crate::tools::task::{Conversation, Memory, ScopeError, SubagentView, TaskScope};
    use crate::tools::{CommandRegistry, Handled, ToolContext, ToolHandler, ToolOutput, exec};

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
            machine: Arc::new(exec::Host::default()),
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
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_tool_has_a_closed_object_schema_and_a_description() {
        let tools = all();
        assert_eq!(tools.len(), 24);
        for tool in tools {
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{}", tool.name());
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name());
            assert!(schema["required"].is_array(), "{}", tool.name());
            assert!(tool.description().len() > 40, "{}", tool.name());
        }
    }

    #[tokio::test]
    async fn bad_arguments_explain_what_is_expected() {
        let (_dir, ctx) = testing::ctx();
        for tool in all() {
            let out = testing::call(tool.as_ref(), &ctx, json!({"bogus": 1})).await;
            assert!(out.is_error, "{}", tool.name());
            assert!(out.text.contains("invalid arguments for"), "{}", out.text);
            assert!(out.text.contains("\"properties\""), "{}", out.text);
        }
    }

    #[tokio::test]
    async fn unknown_command_ids_list_the_running_ones() {
        let (_dir, ctx) = testing::ctx();
        let error = command(&ctx, "cmd-nope").unwrap_err();
        assert!(error.is_error);
        assert!(
            error
                .text
                .contains("unknown command id: cmd-nope (your running commands: none)")
        );
    }
}
