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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing;

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
