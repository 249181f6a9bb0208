//! A year of someone's log written into a home before its daemon starts, for retention and
//! backup at scale (issue 23's "bench/growth-style data"): an agent's notes, plus tasks whose
//! tool calls returned 4 KB outputs (which is where a real log's bytes go), each task with a
//! person's message, the agent's reply, a plan, a verdict and a deliverable.
//!
//! Rows are built with the protocol's types (`EventBody::kind`/`data`, so every event has the
//! shape a running daemon writes) and inserted in one transaction by python3's sqlite3, as
//! `history.rs` does: a million appends through the daemon would take many minutes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use lazyboy_protocol::{
    Deliverable, Effect, EventBody, PlanStep, StepStatus, TaskState, ToolStatus, Verdict, paths,
};
use lazyboyd::bus::Bus;
use lazyboyd::store::Store;
use serde_json::json;

/// The shape of the log [`fill`] writes.
#[derive(Debug, Clone, Copy)]
pub struct Growth {
    pub notes: usize,
    pub tasks: usize,
    pub calls_per_task: usize,
    pub output_bytes: usize,
}

impl Growth {
    /// The issue's million events, tool outputs most of the bytes as in a real log: 100
    /// tasks of 1,500 calls with 4 KB outputs (300,000 events) and 700,000 notes. (With
    /// 900,000 notes and 500 calls a task, 429 MB, the notes and their indexes, which
    /// retention keeps, were 54 % of the file and a pass freed 46 %.)
    pub const MILLION: Growth = Growth {
        notes: 700_000,
        tasks: 100,
        calls_per_task: 1500,
        output_bytes: 4096,
    };

    /// How many events [`fill`] writes.
    pub fn events(&self) -> usize {
        self.notes + self.tasks * (self.calls_per_task * 2 + 7)
    }
}

const INSERT: &str = r#"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=WAL")
with db:
    for line in sys.stdin:
        row = json.loads(line)
        table = row.pop("table")
        keys = list(row)
        db.execute(f"INSERT INTO {table} ({', '.join(keys)}) VALUES ({', '.join('?' * len(keys))})",
                   [row[k] for k in keys])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
"#;

/// A tool's output of about `bytes` bytes: numbered lines, like a build log.
pub fn output(task: usize, call: usize, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 80);
    let mut line = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "task {task} call {call} line {line:04}: compiling module_{line} ... ok\n"
        ));
        line += 1;
    }
    text
}

/// Writes `growth` for `agent` (created here) into the home's database, ended long ago
/// (2023). Returns the agent's chat thread.
pub async fn fill(home: &Path, agent: &str, growth: Growth) -> String {
    let db = home.join(paths::DATABASE);
    let store = Store::open(&db, Bus::default()).await.unwrap();
    let row = store.create_agent(agent, "", None, None).await.unwrap();
    store.close().await;

    let mut python = Command::new("python3")
        .arg("-c")
        .arg(INSERT)
        .arg(&db)
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3 is needed to write the long history (scripts/test installs it)");
    let mut input = std::io::BufWriter::new(python.stdin.take().unwrap());
    let mut at = 1_700_000_000_000_i64;
    let event =
        |input: &mut dyn Write, thread: &str, task: Option<&str>, body: EventBody, at: i64| {
            writeln!(
                input,
                "{}",
                json!({"table": "events", "thread_id": thread, "agent_id": row.id, "task_id": task,
                   "kind": body.kind(), "data": body.data().to_string(), "at_ms": at})
            )
            .unwrap();
        };
    let notes_per_task = growth.notes / growth.tasks.max(1);
    let mut notes_left = growth.notes;
    for n in 0..growth.tasks.max(1) {
        let share = if n + 1 == growth.tasks.max(1) {
            notes_left
        } else {
            notes_per_task
        };
        for k in 0..share {
            at += 10;
            let text = format!("note {n}/{k}: remember to water the plants");
            event(
                &mut input,
                &row.thread,
                None,
                EventBody::UserMessage { text },
                at,
            );
        }
        notes_left -= share;
        if n >= growth.tasks {
            break;
        }
        let task = format!("t-growth{n:04}");
        let thread = format!("growth-thread-{n:04}");
        writeln!(
            input,
            "{}",
            json!({"table": "threads", "id": thread, "agent_id": row.id, "kind": "task",
                   "created_at_ms": at})
        )
        .unwrap();
        let finished = at + 1_000 * (growth.calls_per_task as i64 * 2 + 10);
        writeln!(
            input,
            "{}",
            json!({"table": "tasks", "id": task, "agent_id": row.id, "thread_id": thread,
                   "objective": format!("build project {n}"), "workspace": "/tmp",
                   "state": "done", "verdict": "done", "final_message": format!("built {n}"),
                   "created_at_ms": at, "updated_at_ms": finished})
        )
        .unwrap();
        let mut bodies = vec![
            EventBody::TaskCreated {
                objective: format!("build project {n}"),
                workspace: "/tmp".into(),
            },
            EventBody::TaskState {
                state: TaskState::Running,
            },
            EventBody::PlanUpdated {
                steps: vec![PlanStep {
                    step: format!("build project {n}"),
                    status: StepStatus::Completed,
                }],
                explanation: None,
            },
            EventBody::UserMessage {
                text: format!("please also run the tests of project {n}"),
            },
        ];
        for call in 0..growth.calls_per_task {
            let id = format!("c{call}");
            bodies.push(EventBody::ToolCall {
                call_id: id.clone(),
                name: "exec_command".into(),
                arguments: format!(r#"{{"cmd":"make step{call}"}}"#),
                effect: Some(Effect::Command),
            });
            bodies.push(EventBody::ToolResult {
                call_id: id,
                name: "exec_command".into(),
                status: ToolStatus::Ok,
                output: output(n, call, growth.output_bytes),
                progress: false,
            });
        }
        bodies.push(EventBody::AgentMessage {
            text: format!("built {n}; the tests pass"),
        });
        bodies.push(EventBody::Deliverables {
            files: vec![Deliverable {
                path: format!("project{n}.tar"),
                size: 1234,
            }],
        });
        bodies.push(EventBody::TaskFinished {
            verdict: Verdict::Done,
            message: format!("built {n}"),
        });
        for body in bodies {
            at += 1_000;
            event(&mut input, &thread, Some(&task), body, at);
        }
    }
    drop(input);
    let status = python.wait().unwrap();
    assert!(status.success(), "writing the history failed: {status}");
    row.thread
}
