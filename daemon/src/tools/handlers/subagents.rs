//! The subagent tools: `spawn_subagent` {objective, tools?}, `check_subagent` {id},
//! `message_subagent` {id, text}, `stop_subagent` {id}.
//!
//! A subagent is a task with a parent: same agent, same workspace, its own thread and loop,
//! its rounds capped. It cannot spawn subagents or ask the person (its registry lacks those
//! tools). `spawn_subagent` returns at once; when the parent ends its turn while subagents
//! still run, the loop waits and revives it with their results, so the parent never polls.
//! The runtime (through [`TaskScope`](crate::tools::task::TaskScope)) lets a task act on its
//! own subagents only.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::task::ScopeError;
use crate::tools::{
    Effect, Handled, ToolContext, ToolError, ToolHandler, ToolOutcome, ToolOutput, respond,
};

pub const SPAWN: &str = "spawn_subagent";
pub const CHECK: &str = "check_subagent";
pub const MESSAGE: &str = "message_subagent";
pub const STOP: &str = "stop_subagent";
/// The subagent tools (a subagent never has them).
pub const NAMES: [&str; 4] = [SPAWN, CHECK, MESSAGE, STOP];

pub struct Spawn;
pub struct Check;
pub struct Message;
pub struct Stop;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    objective: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    /// `computer_use`: a subagent that drives the box's desktop with the mouse and keys.
    #[serde(default)]
    kind: Option<String>,
}

/// The tools of a `computer_use` subagent: pixels only (plus the plan and reports every
/// subagent keeps).
pub const COMPUTER_USE: [&str; 3] = ["computer", "screenshot", "send_message"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageArgs {
    id: String,
    text: String,
}

fn id_schema() -> Value {
    schema(
        json!({"id": {"type": "string", "description": "the subagent's task id"}}),
        &["id"],
    )
}

/// A refusal is told to the model; a store failure ends the turn.
fn scope_error(error: ScopeError) -> ToolError {
    match error {
        ScopeError::Refused(text) => respond(text),
        ScopeError::Store(error) => error.into(),
    }
}

fn ok(text: String) -> ToolOutcome {
    Ok(Handled::Output(ToolOutput::ok(text)))
}

impl ToolHandler for Spawn {
    fn name(&self) -> &str {
        SPAWN
    }

    fn description(&self) -> &str {
        "Start a subagent on a self-contained objective; it works in your workspace in parallel \
         and returns at once with its id. You need not poll: when you end your turn, you are \
         woken with the results of the subagents still running. Optionally limit its tools by \
         name. kind \"computer_use\" starts one that works the box's desktop with the mouse and \
         keyboard (its only actions: computer, screenshot, send_message); one runs at a time \
         in the daemon, and it takes the box's screen from you while it works."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "objective": {"type": "string"},
                "tools": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string", "enum": ["computer_use"]}
            }),
            &["objective"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let spawn: SpawnArgs = parse(self, args)?;
            if spawn.objective.trim().is_empty() {
                return Err(respond("spawn_subagent needs a non-empty objective"));
            }
            let spawn = match spawn.kind.as_deref() {
                None => {
                    let tools = spawn.tools.as_deref().unwrap_or_default();
                    if let Some(bad) = tools.iter().find(|t| !ctx.scope.grantable(t)) {
                        return Err(respond(format!(
                            "a subagent cannot be given the tool {bad:?}: give it tools you \
                             have (not the subagent tools or the ones that ask the person)"
                        )));
                    }
                    spawn
                }
                // The kind grants `computer`, which no task has to hand on.
                Some("computer_use") if spawn.tools.is_none() => SpawnArgs {
                    tools: Some(COMPUTER_USE.iter().map(|t| (*t).to_owned()).collect()),
                    ..spawn
                },
                Some("computer_use") => {
                    return Err(respond(
                        "a computer_use subagent has its own tools: leave `tools` out",
                    ));
                }
                Some(other) => {
                    return Err(respond(format!(
                        "unknown subagent kind {other:?}: leave it out, or \"computer_use\""
                    )));
                }
            };
            let id = ctx
                .scope
                .spawn_subagent(spawn.objective.trim(), spawn.tools)
                .await
                .map_err(scope_error)?;
            ok(format!(
                "spawned subagent {id}; it works in the background. When you end your turn you \
                 will be woken with its result; check_subagent shows its progress."
            ))
        })
    }
}

impl ToolHandler for Check {
    fn name(&self) -> &str {
        CHECK
    }

    fn description(&self) -> &str {
        "See one of your subagents' state and, once it ended, its verdict and what it said."
    }

    fn parameters(&self) -> Value {
        id_schema()
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let id: Id = parse(self, args)?;
            let child = ctx.scope.subagent(&id.id).await.map_err(scope_error)?;
            let mut text = format!("subagent {} is {}", child.id, child.state);
            if let Some(verdict) = &child.verdict {
                text.push_str(&format!(" (verdict {verdict})"));
            }
            if let Some(message) = child.final_message.as_deref().filter(|m| !m.is_empty()) {
                text.push_str(&format!("; it said: {message}"));
            }
            ok(text)
        })
    }
}

impl ToolHandler for Message {
    fn name(&self) -> &str {
        MESSAGE
    }

    fn description(&self) -> &str {
        "Send a subagent a new instruction (it decides again with it; one that ended continues \
         with it)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"id": {"type": "string"}, "text": {"type": "string"}}),
            &["id", "text"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let message: MessageArgs = parse(self, args)?;
            if message.text.trim().is_empty() {
                return Err(respond("message_subagent needs a non-empty text"));
            }
            ctx.scope
                .message_subagent(&message.id, message.text.trim())
                .await
                .map_err(scope_error)?;
            ok(format!("sent to {}", message.id))
        })
    }
}

impl ToolHandler for Stop {
    fn name(&self) -> &str {
        STOP
    }

    fn description(&self) -> &str {
        "Stop one of your subagents (its commands are killed; it ends cancelled)."
    }

    fn parameters(&self) -> Value {
        id_schema()
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let id: Id = parse(self, args)?;
            let child = ctx.scope.subagent(&id.id).await.map_err(scope_error)?;
            if ctx.scope.stop_subagent(&id.id).await.map_err(scope_error)? {
                ok(format!("stopping {}", child.id))
            } else {
                ok(format!("{} had already ended ({})", child.id, child.state))
            }
        })
    }
}
