//! The subagent tools: `spawn_subagent` {objective, tools?}, `check_subagent` {id},
//! `message_subagent` {id, text}, `stop_subagent` {id}.
//!
//! A subagent is a task with a parent: same agent, same workspace, its own thread and loop,
//! its rounds capped by `subagent_max_rounds`. It cannot spawn subagents or ask the person.
//! `spawn_subagent` returns at once; when the parent ends its turn while subagents still run,
//! the loop waits for them and revives the parent with their results (see `turn.rs`), so the
//! parent never polls. A task acts only on its own subagents.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Runtime, control, memory};
use crate::providers::ToolDef;
use crate::store::TaskRow;
use crate::tools::ToolOutput;

pub const SPAWN: &str = "spawn_subagent";
pub const CHECK: &str = "check_subagent";
pub const MESSAGE: &str = "message_subagent";
pub const STOP: &str = "stop_subagent";

/// Subagents of one task running at once; more are refused (the model can wait for one).
pub const MAX_LIVE: usize = 4;

pub fn is_subagent_tool(name: &str) -> bool {
    matches!(name, SPAWN | CHECK | MESSAGE | STOP)
}

/// Tools a subagent never gets, whatever its `tools` list says.
pub fn withheld_from_subagents(name: &str) -> bool {
    is_subagent_tool(name) || control::asks_the_person(name)
}

pub fn specs() -> Vec<ToolDef> {
    let id = json!({
        "type": "object",
        "properties": {"id": {"type": "string", "description": "the subagent's task id"}},
        "required": ["id"],
        "additionalProperties": false
    });
    vec![
        ToolDef {
            name: SPAWN.into(),
            description: "Start a subagent on a self-contained objective; it works in your \
                          workspace in parallel and returns at once with its id. You need not \
                          poll: when you end your turn, you are woken with the results of the \
                          subagents still running. Optionally limit its tools by name."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "objective": {"type": "string"},
                    "tools": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["objective"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: CHECK.into(),
            description: "See a subagent's state and, once it ended, its result.".into(),
            parameters: id.clone(),
        },
        ToolDef {
            name: MESSAGE.into(),
            description: "Send a subagent a new instruction (it decides again with it; one \
                          that ended continues with it)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "string"}, "text": {"type": "string"}},
                "required": ["id", "text"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: STOP.into(),
            description: "Stop a subagent.".into(),
            parameters: id,
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spawn {
    objective: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    id: String,
    text: String,
}

/// Runs one subagent tool for `task`.
pub async fn handle(rt: &Runtime, task: &TaskRow, name: &str, args: Value) -> ToolOutput {
    match run(rt, task, name, args).await {
        Ok(text) => ToolOutput::ok(text),
        Err(text) => ToolOutput::error(text),
    }
}

async fn run(rt: &Runtime, task: &TaskRow, name: &str, args: Value) -> Result<String, String> {
    if task.parent_id.is_some() {
        return Err(format!(
            "{name} is not available to a subagent: subagents cannot have subagents"
        ));
    }
    let store_error = |e: crate::store::StoreError| format!("cannot do that now: {e}");
    match name {
        SPAWN => {
            let spawn: Spawn = control::parse(name, args)?;
            if spawn.objective.trim().is_empty() {
                return Err("spawn_subagent needs a non-empty objective".into());
            }
            let tools = spawn.tools.as_deref().unwrap_or_default();
            if let Some(bad) = tools.iter().find(|t| !grantable(rt, t)) {
                return Err(format!(
                    "a subagent cannot be given the tool {bad:?}: give it tools you have (not \
                     the subagent tools or the ones that ask the person)"
                ));
            }
            let live = rt
                .store
                .subagents(&task.id)
                .await
                .map_err(store_error)?
                .iter()
                .filter(|c| !c.state().is_final())
                .count();
            if live >= MAX_LIVE {
                return Err(format!(
                    "{live} subagents are running already (at most {MAX_LIVE}); wait for one \
                     to finish (end your turn and you are woken with the results)"
                ));
            }
            let child = rt
                .store
                .create_subagent(task, spawn.objective.trim(), spawn.tools.as_deref())
                .await
                .map_err(store_error)?;
            rt.enqueue();
            Ok(format!(
                "spawned subagent {}; it works in the background. When you end your turn you \
                 will be woken with its result; check_subagent shows its progress.",
                child.id
            ))
        }
        CHECK => {
            let id: Id = control::parse(name, args)?;
            let child = own_child(rt, task, &id.id).await?;
            let mut text = format!("subagent {} is {}", child.id, child.state().as_str());
            if let Some(verdict) = &child.verdict {
                text.push_str(&format!(" (verdict {verdict})"));
            }
            if let Some(message) = child.final_message.as_deref().filter(|m| !m.is_empty()) {
                text.push_str(&format!("; it said: {message}"));
            }
            Ok(text)
        }
        MESSAGE => {
            let message: Message = control::parse(name, args)?;
            if message.text.trim().is_empty() {
                return Err("message_subagent needs a non-empty text".into());
            }
            let child = own_child(rt, task, &message.id).await?;
            rt.message_task(&child.id, message.text.trim())
                .await
                .map_err(|e| e.to_string())?;
            Ok(format!("sent to {}", child.id))
        }
        STOP => {
            let id: Id = control::parse(name, args)?;
            let child = own_child(rt, task, &id.id).await?;
            match rt.stop(&child.id).await.map_err(store_error)? {
                true => Ok(format!("stopping {}", child.id)),
                false => Ok(format!(
                    "{} had already ended ({})",
                    child.id,
                    child.state().as_str()
                )),
            }
        }
        _ => Err(format!("unknown subagent tool {name}")),
    }
}

/// Whether a parent may hand this tool to a subagent.
fn grantable(rt: &Runtime, name: &str) -> bool {
    !withheld_from_subagents(name)
        && (rt.tools.get(name).is_some() || control::is_control(name) || memory::is_memory(name))
}

async fn own_child(rt: &Runtime, task: &TaskRow, id: &str) -> Result<TaskRow, String> {
    match rt.store.task(id).await {
        Ok(child) if child.parent_id.as_deref() == Some(task.id.as_str()) => Ok(child),
        _ => Err(format!(
            "{id:?} is not one of your subagents; use the id spawn_subagent returned"
        )),
    }
}
