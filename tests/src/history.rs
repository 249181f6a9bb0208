//! A long history written into a home's database before any daemon starts there: for the
//! dashboard's "100,000 events" test and bench.
//!
//! The agent is created by the daemon's own store (`lazyboyd::store::Store`); the tasks and
//! their events are built here with the protocol's types (`EventBody::kind`/`data`, so every
//! event has exactly the shape a running daemon writes) and inserted in one transaction by
//! python3's sqlite3: appending 100,000 events one commit at a time through a debug build
//! takes a minute, this takes a second or two.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use lazyboy_protocol::{Effect, EventBody, TaskState, ToolStatus, Verdict, paths};
use lazyboyd::bus::Bus;
use lazyboyd::store::Store;
use serde_json::json;

/// Events one task of [`fill`] has.
pub const EVENTS_PER_TASK: usize = 64;

const INSERT: &str = r#"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
with db:
    for line in sys.stdin:
        row = json.loads(line)
        table = row.pop("table")
        keys = list(row)
        db.execute(f"INSERT INTO {table} ({', '.join(keys)}) VALUES ({', '.join('?' * len(keys))})",
                   [row[k] for k in keys])
db.close()
"#;

/// Writes about `events` events for `agent` (created here): tasks of [`EVENTS_PER_TASK`]
/// events each (streamed deltas, command calls and results, one message, a verdict), like a
/// busy agent's, one after the other. Returns the last `send_message` text ("reply N").
pub async fn fill(home: &Path, agent: &str, events: usize) -> String {
    let db = home.join(paths::DATABASE);
    let store = Store::open(&db, Bus::default()).await.unwrap();
    let agent_id = store.create_agent(agent, "", None, None).await.unwrap().id;
    store.close().await;

    let mut python = Command::new("python3")
        .arg("-c")
        .arg(INSERT)
        .arg(&db)
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3 is needed to write the long history (scripts/test installs it)");
    let mut input = std::io::BufWriter::new(python.stdin.take().unwrap());
    let start_ms = 1_700_000_000_000_i64;
    let mut at = start_ms;
    let mut last = String::new();
    for n in 0..events.div_ceil(EVENTS_PER_TASK) {
        let task = format!("t-history{n:06}");
        let thread = format!("history-thread-{n:06}");
        last = format!("reply {n}");
        let line = |row: serde_json::Value, input: &mut dyn Write| {
            writeln!(input, "{row}").unwrap();
        };
        line(
            json!({"table": "threads", "id": thread, "agent_id": agent_id, "kind": "task",
                   "created_at_ms": at}),
            &mut input,
        );
        line(
            json!({"table": "tasks", "id": task, "agent_id": agent_id, "thread_id": thread,
                   "objective": format!("job {n}"), "workspace": "/tmp", "state": "done",
                   "verdict": "answer", "final_message": last, "created_at_ms": at,
                   "updated_at_ms": at + 60_000}),
            &mut input,
        );
        let mut bodies = vec![
            EventBody::TaskCreated {
                objective: format!("job {n}"),
                workspace: "/tmp".into(),
            },
            EventBody::TaskState {
                state: TaskState::Running,
            },
        ];
        for round in 0..20 {
            let id = format!("c{round}");
            bodies.push(EventBody::AssistantDelta {
                text: "thinking about it ".into(),
            });
            bodies.push(EventBody::ToolCall {
                call_id: id.clone(),
                name: "exec_command".into(),
                arguments: r#"{"cmd":"ls -la"}"#.into(),
                effect: Some(Effect::Command),
            });
            bodies.push(EventBody::ToolResult {
                call_id: id,
                name: "exec_command".into(),
                status: ToolStatus::Ok,
                output: "total 0\ndrwxr-xr-x 2 me me 40 .\n".into(),
                progress: false,
            });
        }
        bodies.push(EventBody::AgentMessage { text: last.clone() });
        bodies.push(EventBody::TaskFinished {
            verdict: Verdict::Answer,
            message: last.clone(),
        });
        for body in bodies {
            at += 1000;
            line(
                json!({"table": "events", "thread_id": thread, "agent_id": agent_id,
                       "task_id": task, "kind": body.kind(), "data": body.data().to_string(),
                       "at_ms": at}),
                &mut input,
            );
        }
    }
    drop(input);
    let status = python.wait().unwrap();
    assert!(status.success(), "writing the history failed: {status}");
    last
}
