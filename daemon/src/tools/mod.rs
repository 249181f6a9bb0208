//! Every tool the model can call, in one [`Registry`]: one file per tool (or small family)
//! under `handlers/`, each a [`ToolHandler`].
//!
//! A handler sees its task only through [`ToolContext`]: the workspace, the execution
//! backend ([`Machine`](crate::confine::machine::Machine): where commands run and files live), and the narrow
//! [`task::TaskScope`] the agent runtime implements (record an event, the plan, the agent's
//! memory, its subagents, live commands). So nothing here imports `agent/`.
//!
//! What a handler returns ([`Handled`]) is one of: a result for the model (ok or error), or
//! the end of the turn (a verdict, or a question to the person) with the call's result. A
//! bad argument, non-zero exit or missing file is an error result, never a failure of the
//! turn; only [`ToolError::Fatal`] (the store is gone) aborts it, as codex's
//! `FunctionCallError::Fatal`.
//!
//! Each handler declares its [`Effect`] on the world, from its arguments where that
//! matters; the turn loop runs consecutive `read` calls in parallel and everything else
//! alone and in order, and the loop fuses count only calls that change something.

pub mod commands;
pub mod handlers;
pub mod preview;
pub mod spill;
pub mod task;
#[cfg(test)]
pub(crate) mod testing;
pub mod workspace;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
pub use lazyboy_protocol::Effect;
use lazyboy_protocol::{Approval, EventBody, Verdict};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use commands::CommandRegistry;

use crate::store::StoreError;

/// What a tool needs from the task that called it.
#[derive(Clone)]
pub struct ToolContext {
    /// The task's workspace on the host, open: every host path is opened beneath it.
    pub workspace: Arc<workspace::Root>,
    pub task_id: String,
    /// The call being answered, as recorded (its result and a question name it).
    pub call: String,
    /// A name for the call unique across tasks of one workspace (spill files use it).
    pub call_id: String,
    /// Where commands run and files are read and written.
    pub machine: Arc<dyn crate::confine::machine::Machine>,
    /// Every command the daemon started, by id.
    pub commands: Arc<CommandRegistry>,
    /// The task and its agent, as far as a tool may touch them.
    pub scope: Arc<dyn task::TaskScope>,
    /// Cancelled when the task is stopped: a tool waiting on something returns promptly.
    pub cancel: CancellationToken,
}

/// A tool's result, for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// For waits (`await_command`, `write_stdin`): whether the call returned output the
    /// model had not seen. Such a call is progress, and never counts toward the loop fuses.
    pub new_output: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
            new_output: false,
        }
    }

    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
            new_output: false,
        }
    }
}

/// How a call ends its turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The task ends with this verdict and message (`report_done`, `report_blocked`).
    Verdict(Verdict, String),
    /// A question to the person was recorded: the task waits for the answer, which becomes
    /// this call's result.
    AskPerson,
}

/// What a handler did.
#[derive(Debug, Clone, PartialEq)]
pub enum Handled {
    /// A result for the model; the batch goes on.
    Output(ToolOutput),
    /// The turn ends. `output` is the call's result (`None`: it has none yet, the person's
    /// answer will be it).
    EndTurn {
        output: Option<String>,
        end: TurnEnd,
    },
}

impl From<ToolOutput> for Handled {
    fn from(output: ToolOutput) -> Handled {
        Handled::Output(output)
    }
}

/// Why a handler stopped short.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// An error result for the model (a bad argument, path or id), so that `?` ends a
    /// handler in one token.
    #[error("{}", .0.text)]
    Respond(ToolOutput),
    /// Nothing more can be recorded (the store failed): the turn aborts.
    #[error("fatal: {0}")]
    Fatal(String),
}

impl From<ToolOutput> for ToolError {
    fn from(output: ToolOutput) -> ToolError {
        ToolError::Respond(output)
    }
}

impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> ToolError {
        ToolError::Fatal(error.to_string())
    }
}

/// An error result for the model.
pub fn respond(text: impl Into<String>) -> ToolError {
    ToolError::Respond(ToolOutput::error(text))
}

/// What [`ToolHandler::handle`] returns.
pub type ToolOutcome = Result<Handled, ToolError>;

/// One tool.
pub trait ToolHandler: Send + Sync {
    /// The name the model calls it by (owned by the handler: run-time tools have their own).
    fn name(&self) -> &str;
    /// For the model: what it does, when to use it, and which machine it acts on.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// What this call does to the world. `args` is the parsed arguments object, or `Null`
    /// when they did not parse (the call then only gets an error).
    fn effect(&self, args: &Value) -> Effect;
    /// Whether a call must be the only one in its reply (it ends the turn).
    fn alone(&self) -> bool {
        false
    }
    /// Runs the tool. `args` is already parsed JSON (the loop answers invalid JSON itself).
    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome>;
    /// What the person is shown when the agent's policy makes this call wait for approval:
    /// exactly what will run or change. `None`: nothing to approve (a wait starts nothing, or
    /// the call would fail before acting), so it runs without asking. Called before
    /// [`ToolHandler::handle`], with nothing done yet.
    fn preview<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        args: &'a Value,
    ) -> BoxFuture<'a, Option<Approval>> {
        let approval = preview::generic(self.name(), self.effect(args), args);
        Box::pin(async move { Some(approval) })
    }
}

/// Runs `tool` and flattens a [`ToolError::Respond`] into the result it carries.
pub async fn run(
    tool: &dyn ToolHandler,
    ctx: &ToolContext,
    args: Value,
) -> Result<Handled, String> {
    match tool.handle(ctx, args).await {
        Ok(handled) => Ok(handled),
        Err(ToolError::Respond(output)) => Ok(Handled::Output(output)),
        Err(ToolError::Fatal(message)) => Err(message),
    }
}

/// The shape of a task, for building its registry.
#[derive(Debug, Clone, Default)]
pub struct TaskTools {
    /// A subagent: never the subagent tools or the ones that ask the person.
    pub subagent: bool,
    /// A subagent limited to these tools (the plan, message and report tools always stay).
    pub allowed: Option<Vec<String>>,
}

/// Tools a subagent keeps whatever its list says: it must be able to plan, speak and end.
const ALWAYS: [&str; 4] = [
    handlers::plan::NAME,
    handlers::message::NAME,
    handlers::report::DONE,
    handlers::report::BLOCKED,
];

/// The tools of one task, by name.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn ToolHandler>>,
}

impl Registry {
    /// Every standard tool.
    pub fn standard() -> Registry {
        let mut registry = Registry::default();
        for tool in handlers::all() {
            registry.register(tool);
        }
        registry
    }

    /// The registry a task gets: the standard tools, minus what a subagent may not have.
    pub fn for_task(shape: &TaskTools) -> Registry {
        let mut registry = Registry::standard();
        if shape.subagent {
            registry
                .tools
                .retain(|name, _| !handlers::withheld_from_subagents(name));
            if let Some(allowed) = &shape.allowed {
                registry.tools.retain(|name, _| {
                    ALWAYS.contains(&name.as_str()) || allowed.iter().any(|a| a == name)
                });
            }
        }
        registry
    }

    /// Adds (or replaces) a tool under its own name.
    pub fn register(&mut self, tool: Arc<dyn ToolHandler>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.tools.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn ToolHandler>> {
        self.tools.values()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// The effect of a call to `name` with `args`; an unknown tool only gets an error, so it
    /// is a read.
    pub fn effect(&self, name: &str, args: &Value) -> Effect {
        self.get(name)
            .map_or(Effect::Read, |tool| tool.effect(args))
    }

    /// Whether a call to `name` must be alone in its reply.
    pub fn alone(&self, name: &str) -> bool {
        self.get(name).is_some_and(|tool| tool.alone())
    }
}

/// The event a tool records to ask the person (used by the `ask` family).
pub fn question(
    call_id: &str,
    question: String,
    options: Vec<String>,
    takeover: Option<String>,
) -> EventBody {
    EventBody::Question {
        call_id: call_id.to_owned(),
        question,
        options,
        takeover,
        approval: None,
    }
}
