//! The tool set's declarations: each tool's name, description and input schema, written for
//! a model to follow, and its annotations (`readOnlyHint` exactly for
//! [`READ_ONLY_TOOLS`], which a relay may send again after a daemon restart).
//!
//! One table: `tools/list` is built from it and `call.rs` dispatches on the same names.

use lazyboy_protocol::mcp_server::{MAX_WAIT_SECS, READ_ONLY_TOOLS};
use serde_json::{Value, json};

/// One tool as declared.
pub struct Declared {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: Value,
    pub destructive: bool,
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn task_arg() -> Value {
    json!({"type": "string", "description": "The task's id, as ask_agent, tell_agent or list_agents gave it."})
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<Declared> {
    let wait = format!(
        "Seconds to wait for the task to end or to need the person, 0 to {MAX_WAIT_SECS} \
         (default 0: return at once)."
    );
    let timeout = format!("Seconds to wait at most, 0 to {MAX_WAIT_SECS}.");
    vec![
        Declared {
            name: "list_agents",
            description: "List the named LazyBoy agents you may use: each one's state (idle, \
                queued, running, waiting_for_human), its current task, model, workspace and \
                last heartbeat.",
            schema: object(json!({}), &[]),
            destructive: false,
        },
        Declared {
            name: "ask_agent",
            description: "Hand a job to a named LazyBoy agent as a background task; it runs \
                for as long as it needs (hours if need be) and survives restarts. Returns the \
                task id and state at once; with wait_s it waits up to that long and, if the \
                task ended meanwhile, returns its verdict, final message and files. A busy \
                agent queues the job behind its current task. Follow up with wait_task or \
                task_status.",
            schema: object(
                json!({
                    "agent": {"type": "string", "description": "The agent's name (see list_agents)."},
                    "job": {"type": "string", "description": "What the agent should do, as you would brief a colleague: the goal, what to deliver, where."},
                    "workspace": {"type": "string", "description": "An absolute path to an existing directory the task works in (default: the agent's own workspace)."},
                    "wait_s": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECS, "description": wait},
                }),
                &["agent", "job"],
            ),
            destructive: false,
        },
        Declared {
            name: "task_status",
            description: "A task's state, verdict and final message, the question or approval \
                it waits on (text, options, what will run), its plan and latest progress, and \
                its files.",
            schema: object(json!({"task": task_arg()}), &["task"]),
            destructive: false,
        },
        Declared {
            name: "wait_task",
            description: "Wait until a task ends, needs the person (a question or an \
                approval), or timeout_s passes; then return what task_status returns. Sends \
                progress notifications while it waits when you give a progress token.",
            schema: object(
                json!({
                    "task": task_arg(),
                    "timeout_s": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECS, "description": timeout},
                }),
                &["task", "timeout_s"],
            ),
            destructive: false,
        },
        Declared {
            name: "answer_task",
            description: "Answer the question a task waits on, as the person: free text, or \
                the number of one of its options (1 is the first). The task resumes.",
            schema: object(
                json!({
                    "task": task_arg(),
                    "text": {"type": "string", "description": "The answer as text."},
                    "option": {"type": "integer", "minimum": 1, "description": "The number of one of the question's options (1 is the first)."},
                }),
                &["task"],
            ),
            destructive: false,
        },
        Declared {
            name: "approve_call",
            description: "Approve the call a task waits on (task_status shows what will run): \
                it runs, then the task goes on.",
            schema: object(
                json!({
                    "task": task_arg(),
                    "for_task": {"type": "boolean", "description": "Also approve the same call for the rest of the task."},
                }),
                &["task"],
            ),
            destructive: false,
        },
        Declared {
            name: "deny_call",
            description: "Deny the call a task waits on: it never runs, and the agent reads \
                the reason.",
            schema: object(
                json!({
                    "task": task_arg(),
                    "reason": {"type": "string", "description": "What the agent is told."},
                }),
                &["task"],
            ),
            destructive: false,
        },
        Declared {
            name: "tell_agent",
            description: "Write to an agent as the person: it steers the agent's running task, \
                else answers the question its waiting task asked, else starts a task with the \
                text as its job. Returns which it did and the task.",
            schema: object(
                json!({
                    "agent": {"type": "string", "description": "The agent's name."},
                    "text": {"type": "string", "description": "The message."},
                }),
                &["agent", "text"],
            ),
            destructive: false,
        },
        Declared {
            name: "stop_task",
            description: "Stop a task (and its subagents): it ends cancelled.",
            schema: object(json!({"task": task_arg()}), &["task"]),
            destructive: true,
        },
        Declared {
            name: "task_files",
            description: "The files a task delivered (its last report_done), each with the \
                resource URI that resources/read returns its bytes from.",
            schema: object(json!({"task": task_arg()}), &["task"]),
            destructive: false,
        },
    ]
}

/// The `tools/list` entry of a declared tool.
pub fn listed(tool: &Declared) -> Value {
    let read_only = READ_ONLY_TOOLS.contains(&tool.name);
    json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.schema,
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": tool.destructive,
            "idempotentHint": read_only,
            "openWorldHint": false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_read_only_name_is_a_tool_and_names_are_unique() {
        let tools = all();
        let names: Vec<_> = tools.iter().map(|t| t.name).collect();
        for name in READ_ONLY_TOOLS {
            assert!(names.contains(name), "{name}");
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        for tool in &tools {
            let listed = listed(tool);
            assert_eq!(listed["inputSchema"]["type"], "object", "{}", tool.name);
            for required in listed["inputSchema"]["required"].as_array().unwrap() {
                let key = required.as_str().unwrap();
                assert!(listed["inputSchema"]["properties"][key]["description"].is_string());
            }
        }
    }
}
