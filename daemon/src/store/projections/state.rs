//! `GET /api/state`: the status board, read in one snapshot with a fixed number of queries
//! whatever the size of the log: each per-agent or per-task "newest event of a kind" is a
//! seek on a partial index (`events_agent_messages`, `events_task_plans`,
//! `events_task_questions`), never a scan.

use std::collections::HashMap;
use std::path::Path;

use lazyboy_protocol::{
    AgentStatus, DashboardState, LastMessage, OpenQuestion, PlanStep, StepStatus, Task,
};
use sqlx::Connection;

use crate::store::agents::SELECT_LIVE;
use crate::store::tasks::SELECT_TASK;
use crate::store::{AgentRow, Store, StoreError, TaskRow, now_ms};

/// Ended tasks listed per agent (its open ones are always listed).
pub const RECENT_TASKS: i64 = 5;

const OPEN: &str = "('queued', 'running', 'recovering', 'waiting_for_human')";

impl Store {
    /// Every live agent with its state, plan step, last message and tasks; the open
    /// questions; and the seq all of it is current to. `workspaces` is where default
    /// workspaces live.
    pub async fn dashboard_state(&self, workspaces: &Path) -> Result<DashboardState, StoreError> {
        let mut conn = self.inner.reader.acquire().await?;
        let mut tx = conn.begin().await?;
        let seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&mut *tx)
            .await?;
        let agents: Vec<AgentRow> = sqlx::query_as(&format!("{SELECT_LIVE} ORDER BY a.name"))
            .fetch_all(&mut *tx)
            .await?;
        let messages: Vec<(i64, i64, i64, Option<String>)> = sqlx::query_as(
            "SELECT a.id, e.seq, e.at_ms, json_extract(e.data, '$.text') FROM agents a \
             JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
                 WHERE x.agent_id = a.id AND x.kind = 'agent_message') \
             WHERE a.deleted_at_ms IS NULL",
        )
        .fetch_all(&mut *tx)
        .await?;
        let plans: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT t.id, json_extract(e.data, '$.steps') FROM tasks t \
             JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
                 WHERE x.task_id = t.id AND x.kind = 'plan_updated') \
             WHERE t.state IN {OPEN} AND t.parent_id IS NULL"
        ))
        .fetch_all(&mut *tx)
        .await?;
        let questions: Vec<(String, String, i64, i64, String)> = sqlx::query_as(
            "SELECT t.id, a.name, e.seq, e.at_ms, e.data FROM tasks t \
             JOIN agents a ON a.id = t.agent_id \
             JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
                 WHERE x.task_id = t.id AND x.kind = 'question') \
             WHERE t.state = 'waiting_for_human' AND a.deleted_at_ms IS NULL ORDER BY e.seq",
        )
        .fetch_all(&mut *tx)
        .await?;
        // Each agent's open top-level tasks and its last few ended ones.
        let tasks: Vec<TaskRow> = sqlx::query_as(&format!(
            "SELECT * FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.agent_id \
                 ORDER BY x.created_at_ms DESC, x.id DESC) AS rank \
             FROM ({SELECT_TASK} WHERE t.parent_id IS NULL AND a.deleted_at_ms IS NULL) x) \
             WHERE rank <= {RECENT_TASKS} OR state IN {OPEN} \
             ORDER BY created_at_ms DESC, id DESC"
        ))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;

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
