//! Tools the agent calls. One file per tool under `handlers/`, reached through [`Registry`].
//!
//! A tool's bad argument, non-zero exit or missing file is a result for the model
//! ([`ToolOutput`] with `is_error`), never a failure of the turn: only the agent loop decides
//! to abort one. Even the `Err` arm of [`ToolOutcome`] is such a result, there so a handler can
//! stop early with `?`. Every path a tool touches is confined to the task's workspace
//! ([`workspace`]).
//!
//! The control tools (plan, messages, reports, questions, memory, subagents) act on the task
//! or the agent itself, so the agent loop handles them (`agent::control_calls`) and adds their
//! definitions to this registry's when it asks the model.

pub mod commands;
pub mod handlers;
pub mod spill;
pub mod workspace;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use commands::CommandRegistry;

/// What the person's own processes would get, recorded at daemon start: the daemon runs
/// with umask 077 for its private files, but what agents create in a workspace belongs to
/// the person and gets their usual permissions.
static USER_UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Environment variables that hold the daemon's secrets (provider keys, the API token):
/// never passed to the commands agents run, where an `env` would put them in the log.
static SECRET_ENV: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Records the umask the daemon was started with (call once, at start).
pub fn set_user_umask(mask: u32) {
    let _ = USER_UMASK.set(mask & 0o777);
}

/// The person's umask (022 if never recorded).
pub fn user_umask() -> u32 {
    USER_UMASK.get().copied().unwrap_or(0o022)
}

/// Records extra secret variable names (the config's `api_key_env` entries).
pub fn set_secret_env(names: Vec<String>) {
    let _ = SECRET_ENV.set(names);
}

/// Whether a variable must not reach agents' commands.
pub fn is_secret_env(name: &str) -> bool {
    name.starts_with("LAZYBOY_")
        || matches!(name, "OPENAI_API_KEY" | "ANTHROPIC_API_KEY")
        || SECRET_ENV
            .get()
            .is_some_and(|names| names.iter().any(|n| n == name))
}

/// How the agent loop may schedule a call, and how the loop fuses count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Observes without changing anything (reads, search): runs in parallel with its
    /// neighbours; never counts toward loop fuses.
    ReadOnly,
    /// Changes state (writes, commands): runs alone, in order.
    Mutating,
    /// Waits on something already running (`await_command`, `write_stdin`): runs alone; counts
    /// toward loop fuses only when it brought no new output.
    Wait,
    /// Changes the task itself (plan, messages, reports): handled by the agent loop.
    Control,
}

/// What a tool needs from the task that called it.
#[derive(Clone)]
pub struct ToolContext {
    /// The task's workspace, canonicalized. Every path is resolved inside it.
    pub workspace: PathBuf,
    pub task_id: String,
    /// The call being answered (used to name spill files).
    pub call_id: String,
    /// Every command the daemon started, by id.
    pub commands: Arc<CommandRegistry>,
    /// Cancelled when the task is stopped: a tool waiting on something returns promptly.
    pub cancel: CancellationToken,
}

/// A tool's result, for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// For [`ToolKind::Wait`] tools: whether the wait returned output the model had not seen.
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

/// What [`ToolHandler::handle`] returns. Both arms are results for the model: `Ok` when the
/// tool ran its course (a non-zero exit still sets `is_error`), `Err` an error result that cut
/// it short, so that `?` on a bad argument, path or command id ends a handler in one token.
/// [`ToolHandler::run`] is the one place that flattens the two.
pub type ToolOutcome = Result<ToolOutput, ToolOutput>;

/// One tool.
pub trait ToolHandler: Send + Sync {
    fn name(&self) -> &'static str;
    /// For the model: what it does and when to use it.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// Runs the tool. `args` is already parsed JSON (the loop answers invalid JSON itself).
    /// Callers use [`run`](ToolHandler::run); this is what each tool implements.
    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome>;

    /// Runs the tool and gives its result for the model, whichever arm `handle` ended in.
    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { self.handle(ctx, args).await.unwrap_or_else(|out| out) })
    }
}

/// Every tool, by name.
pub struct Registry {
    tools: BTreeMap<&'static str, Arc<dyn ToolHandler>>,
}

impl Registry {
    /// The standard tool set.
    pub fn standard() -> Registry {
        let mut tools: BTreeMap<&'static str, Arc<dyn ToolHandler>> = BTreeMap::new();
        for tool in handlers::all() {
            tools.insert(tool.name(), tool);
        }
        Registry { tools }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.tools.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn ToolHandler>> {
        self.tools.values()
    }
}
