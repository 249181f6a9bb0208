//! `GET /api/state`: the status board, read in one snapshot with a fixed number of queries
//! whatever the size of the log: each per-agent or per-task "newest event of a kind" is a
//! seek on a partial index (`events_agent_messages`, `events_task_plans`,
//! `events_task_questions`), never a scan. Each backend reads the rows
//! ([`BoardRows`], `sqlite/projections.rs`, `postgres/projections.rs`); this file folds them.

use std::collections::HashMap;
use std::path::Path;

use lazyboy_protocol::{
    AgentStatus, DashboardState, LastMessage, OpenQuestion, PlanStep, StepStatus, Task,
};

use crate::store::{AgentRow, Store, StoreError, TaskRow, now_ms};

/// Ended tasks listed per agent (its open ones are always listed).
pub const RECENT_TASKS: i64 = 5;

/// The states of a task that is not over, as SQL (the same on both backends).
pub(in crate::store) const OPEN: &str = "('queued', 'running', 'recovering', 'waiting_for_human')";

/// What the board is made of, read by a backend in one snapshot.
pub(in crate::store) struct BoardRows {
    /// The seq all of it is current to.
    pub seq: i64,
    /// Live agents by name.
    pub agents: Vec<AgentRow>,
    /// Per live agent its newest `agent_message`: agent id, seq, time, text.
    pub messages: Vec<(i64, i64, i64, Option<String>)>,
    /// Per open top-level task its newest plan: task id, the steps as JSON.
    pub plans: Vec<(String, String)>,
    /// Per waiting task of a live agent its newest question: task, agent, seq, time, data.
    pub questions: Vec<(String, String, i64, i64, String)>,
    /// Each live agent's open top-level tasks and its last [`RECENT_TASKS`] ended ones,
    /// newest first.
    pub tasks: Vec<TaskRow>,
}

impl Store {
    /// Every live agent with its state, plan step, last message and tasks; the open
    /// questions; and the seq all of it is current to. `workspaces` is where default
    /// workspaces live.
    pub async fn dashboard_state(&self, workspaces: &Path) -> Result<DashboardState, StoreError> {
        let BoardRows {
            seq,
            agents,
            messages,
            plans,
            questions,
            tasks,
        } = self.board_rows().await?;

        let mut messages: HashMap<i64, LastMessage> = messages
            .into_iter()
            .map(|(agent, seq, at_ms, text)| {
                let text = text.unwrap_or_default();
                (agent, LastMessage { seq, at_ms, text })
            })
            .collect();
        let plans: HashMap<String, Vec<PlanStep>> = plans
            .into_iter()
            .filter_map(|(task, steps)| Some((task, serde_json::from_str(&steps).ok()?)))
            .collect();
        let questions: Vec<OpenQuestion> = questions
            .into_iter()
            .filter_map(|(task, agent, seq, at_ms, data)| {
                let data: serde_json::Value = serde_json::from_str(&data).ok()?;
                let text = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
                Some(OpenQuestion {
                    call_id: text("call_id"),
                    question: text("question"),
                    options: serde_json::from_value(data["options"].clone()).unwrap_or_default(),
                    takeover: data["takeover"].as_str().map(str::to_owned),
                    approval: serde_json::from_value(data["approval"].clone())
                        .ok()
                        .flatten(),
                    task,
                    agent,
                    seq,
                    at_ms,
                })
            })
            .collect();
        let mut by_agent: HashMap<i64, Vec<Task>> = HashMap::new();
        for row in tasks {
            by_agent.entry(row.agent_id).or_default().push(row.into());
        }
        let agents = agents
            .into_iter()
            .map(|row| {
                let plan = row
                    .current_task
                    .as_ref()
                    .and_then(|task| plans.get(task))
                    .cloned()
                    .unwrap_or_default();
                let waiting = questions.iter().any(|q| q.agent == row.name);
                AgentStatus {
                    plan_step: plan_step(&plan),
                    plan,
                    last_message: messages.remove(&row.id),
                    waiting,
                    tasks: by_agent.remove(&row.id).unwrap_or_default(),
                    agent: row.to_api(workspaces),
                }
            })
            .collect();
        Ok(DashboardState {
            seq,
            now_ms: now_ms(),
            agents,
            questions,
        })
    }
}

/// The step a plan is on: the first in progress, else the first pending.
pub fn plan_step(plan: &[PlanStep]) -> Option<String> {
    plan.iter()
        .find(|s| s.status == StepStatus::InProgress)
        .or_else(|| plan.iter().find(|s| s.status == StepStatus::Pending))
        .map(|s| s.step.clone())
}
