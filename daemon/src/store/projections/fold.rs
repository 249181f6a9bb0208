//! The conversation fold: events of one agent, oldest first, into chat items. Pure (no IO),
//! so the paging in `conversation.rs` and the page's live fold (`web/lib/fold.js`, which
//! mirrors these rules) can be checked against it.
//!
//! Rules:
//! - The person's and the agent's messages, task starts, plans, questions, verdicts and notes
//!   are items of their own.
//! - Every other tool call, its result, and background commands join the [`WorkGroup`] that
//!   the previous item is, when that group is of the same task; otherwise they open one. So
//!   a turn's tool work between two things said is one line.
//! - The calls behind items (`send_message`, `update_plan`, the questions, the reports) are
//!   not work: their item says what they did. A question's result is its answer; the
//!   `report_done` call gives the verdict its report.

use std::collections::HashMap;

use lazyboy_protocol::{
    ConversationItem, Effect, PlanStep, Report, ToolStatus, Verdict, WORK_OUTPUT_CHARS,
    WORK_STEPS_KEPT, WorkGroup, WorkStep,
};
use serde::Deserialize;
use serde_json::Value;

/// Tools whose calls are shown as their own items, not as work.
pub const SHOWN_AS_ITEMS: [&str; 6] = [
    "send_message",
    "update_plan",
    "request_user_input",
    "request_takeover",
    "report_done",
    "report_blocked",
];
/// The tools whose result is the person's answer to a question item.
const ASKING: [&str; 2] = ["request_user_input", "request_takeover"];

/// One event as the projections read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Row {
    pub seq: i64,
    pub kind: String,
    pub task: Option<String>,
    pub at_ms: i64,
    pub data: String,
}

/// How an event takes part in the conversation.
#[derive(Debug, PartialEq, Eq)]
pub enum Role<'a> {
    /// It starts an item of its own.
    Item,
    /// It joins (or opens) the work group of this task.
    Work(&'a str),
    /// It changes no item boundary (a call shown by its own item, a question's answer).
    Quiet,
}

/// The role of `row` (its `data` parsed as `data`).
pub fn role<'a>(row: &'a Row, data: &Value) -> Role<'a> {
    match row.kind.as_str() {
        "tool_call" | "tool_result" => {
            let name = data["name"].as_str().unwrap_or_default();
            match &row.task {
                _ if SHOWN_AS_ITEMS.contains(&name) => Role::Quiet,
                Some(task) => Role::Work(task),
                None => Role::Quiet,
            }
        }
        "command_started" | "command_ended" => match &row.task {
            Some(task) => Role::Work(task),
            None => Role::Quiet,
        },
        _ => Role::Item,
    }
}

/// Folds events (oldest first) into items (oldest first).
#[derive(Default)]
pub struct Fold {
    items: Vec<ConversationItem>,
    /// The last `report_done` of each task, waiting for its verdict.
    reports: HashMap<String, Report>,
    /// Question items by call id.
    questions: HashMap<String, usize>,
}

impl Fold {
    pub fn push(&mut self, row: &Row) {
        let data: Value = serde_json::from_str(&row.data).unwrap_or(Value::Null);
        match role(row, &data) {
            Role::Quiet => self.quiet(row, &data),
            Role::Work(task) => self.work(row, task, &data),
            Role::Item => {
                if let Some(item) = self.item(row, &data) {
                    self.items.push(item);
                }
            }
        }
    }

    pub fn finish(self) -> Vec<ConversationItem> {
        self.items
    }

    /// Question items that have no answer yet: `(call id, task)`.
    pub fn unanswered(&self) -> Vec<(String, String)> {
        self.items
            .iter()
            .filter_map(|item| match item {
                ConversationItem::Question {
                    call_id,
                    task,
                    answer: None,
                    ..
                } => Some((call_id.clone(), task.clone())),
                _ => None,
            })
            .collect()
    }

    /// Gives the question asked by `call_id` its answer.
    pub fn answer(&mut self, call_id: &str, text: String) {
        if let Some(ConversationItem::Question { answer, .. }) = self
            .questions
            .get(call_id)
            .and_then(|i| self.items.get_mut(*i))
        {
            *answer = Some(text);
        }
    }

    fn quiet(&mut self, row: &Row, data: &Value) {
        let name = data["name"].as_str().unwrap_or_default();
        match row.kind.as_str() {
            "tool_result" if ASKING.contains(&name) => {
                let call = data["call_id"].as_str().unwrap_or_default().to_owned();
                self.answer(&call, text(&data["output"]));
            }
            "tool_call" if name == "report_done" => {
                let args: Value = serde_json::from_str(data["arguments"].as_str().unwrap_or("{}"))
                    .unwrap_or(Value::Null);
                if let (Some(task), Ok(report)) = (&row.task, ReportArgs::deserialize(&args)) {
                    self.reports.insert(
                        task.clone(),
                        Report {
                            summary: report.summary,
                            evidence: report.evidence,
                            files: report.files,
                        },
                    );
                }
            }
            _ => {}
        }
    }

    fn work(&mut self, row: &Row, task: &str, data: &Value) {
        let group = match self.items.last_mut() {
            Some(ConversationItem::Work(group)) if group.task == task => group,
            _ => {
                self.items.push(ConversationItem::Work(WorkGroup {
                    seq: row.seq,
                    last_seq: row.seq,
                    at_ms: row.at_ms,
                    last_at_ms: row.at_ms,
                    task: task.to_owned(),
                    counts: Default::default(),
                    steps: Vec::new(),
                    omitted: 0,
                }));
                match self.items.last_mut() {
                    Some(ConversationItem::Work(group)) => group,
                    _ => return,
                }
            }
        };
        group.last_seq = row.seq;
        group.last_at_ms = row.at_ms;
        let id = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
        let step = match row.kind.as_str() {
            "tool_call" => {
                let effect = serde_json::from_value::<Effect>(data["effect"].clone()).ok();
                *group
                    .counts
                    .entry(effect.unwrap_or(Effect::Control))
                    .or_default() += 1;
                WorkStep {
                    seq: row.seq,
                    id: id("call_id"),
                    name: id("name"),
                    effect,
                    arguments: id("arguments"),
                    status: None,
                    output: None,
                }
            }
            "tool_result" => {
                let call = id("call_id");
                let status = serde_json::from_value::<ToolStatus>(data["status"].clone()).ok();
                let output = clip(&text(&data["output"]));
                if let Some(step) = group.steps.iter_mut().rev().find(|s| s.id == call) {
                    step.status = status;
                    step.output = Some(output);
                    return;
                }
                // Its call is in an earlier group (a note landed in between), or was dropped
                // from this one's window: the result stands alone.
                WorkStep {
                    seq: row.seq,
                    id: call,
                    name: id("name"),
                    effect: None,
                    arguments: String::new(),
                    status,
                    output: Some(output),
                }
            }
            "command_started" => WorkStep {
                seq: row.seq,
                id: id("command_id"),
                name: row.kind.clone(),
                effect: Some(Effect::Command),
                arguments: id("command"),
                status: None,
                output: Some(id("log")),
            },
            _ => WorkStep {
                seq: row.seq,
                id: id("command_id"),
                name: row.kind.clone(),
                effect: Some(Effect::Command),
                arguments: String::new(),
                status: None,
                output: Some(id("status")),
            },
        };
        group.steps.push(step);
        if group.steps.len() > WORK_STEPS_KEPT {
            group.steps.remove(0);
            group.omitted += 1;
        }
    }

    fn item(&mut self, row: &Row, data: &Value) -> Option<ConversationItem> {
        let (seq, at_ms, task) = (row.seq, row.at_ms, row.task.clone());
        let field = |key: &str| text(&data[key]);
        Some(match row.kind.as_str() {
            "user_message" => ConversationItem::UserMessage {
                seq,
                at_ms,
                task,
                text: field("text"),
            },
            "agent_message" => ConversationItem::AgentMessage {
                seq,
                at_ms,
                task,
                text: field("text"),
            },
            "task_created" => ConversationItem::TaskStarted {
                seq,
                at_ms,
                task: task?,
                objective: field("objective"),
            },
            "plan_updated" => ConversationItem::Plan {
                seq,
                at_ms,
                task: task?,
                steps: serde_json::from_value::<Vec<PlanStep>>(data["steps"].clone())
                    .unwrap_or_default(),
                explanation: data["explanation"].as_str().map(str::to_owned),
            },
            "question" => {
                let call_id = field("call_id");
                self.questions.insert(call_id.clone(), self.items.len());
                ConversationItem::Question {
                    seq,
                    at_ms,
                    task: task?,
                    call_id,
                    question: field("question"),
                    options: serde_json::from_value(data["options"].clone()).unwrap_or_default(),
                    takeover: data["takeover"].as_str().map(str::to_owned),
                    approval: serde_json::from_value(data["approval"].clone())
                        .ok()
                        .flatten(),
                    answer: None,
                }
            }
            "task_finished" => {
                let task = task?;
                let verdict: Verdict = serde_json::from_value(data["verdict"].clone()).ok()?;
                let report = self.reports.remove(&task);
                ConversationItem::Verdict {
                    seq,
                    at_ms,
                    report: report.filter(|_| verdict == Verdict::Done),
                    task,
                    verdict,
                    message: field("message"),
                }
            }
            "runtime_note" => ConversationItem::Note {
                seq,
                at_ms,
                task,
                text: field("text"),
            },
            kind => ConversationItem::Note {
                seq,
                at_ms,
                task,
                text: schedule_note(kind, data)?,
            },
        })
    }
}

#[derive(Deserialize)]
struct ReportArgs {
    summary: String,
    evidence: String,
    #[serde(default)]
    files: Vec<String>,
}

fn schedule_note(kind: &str, data: &Value) -> Option<String> {
    let id = data["schedule"].as_str().unwrap_or("?");
    Some(match kind {
        "schedule_added" => format!(
            "schedule {id} added: {} at {}",
            text(&data["objective"]),
            text(&data["cron"])
        ),
        "schedule_removed" => format!("schedule {id} removed"),
        "schedule_paused" => format!("schedule {id} paused"),
        "schedule_resumed" => format!("schedule {id} resumed"),
        "schedule_fired" => format!("schedule {id} started a task"),
        "schedule_skipped" => format!("schedule {id} skipped a slot: {}", text(&data["reason"])),
        _ => return None,
    })
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// At most [`WORK_OUTPUT_CHARS`] characters, marked when cut.
fn clip(output: &str) -> String {
    match output.char_indices().nth(WORK_OUTPUT_CHARS) {
        Some((end, _)) => format!("{}\n… (cut; the task's events have it all)", &output[..end]),
        None => output.to_owned(),
    }
}

#[cfg(test)]
mod tests;
