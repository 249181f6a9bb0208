//! Schedules: a cron expression that queues the same job for its agent at every slot.
//!
//! The store keeps each schedule's next slot (`next_run_at_ms`, `NULL` while paused); the
//! timer in `agent::schedules` decides what a due slot does and computes the next one. Every
//! change appends an event to the agent's chat thread in the same transaction. A firing
//! creates its task in that transaction too, and only if the schedule is still active and
//! still due at the slot the timer read, so a pause, a removal, an agent deletion or another
//! daemon's timer racing this one never lets a stale slot fire (or one fire twice). A deleted agent's schedules are invisible (every
//! read joins live agents) and never fire.

use lazyboy_protocol::Schedule;

use super::events::Target;

/// A schedule of a live agent.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ScheduleRow {
    pub id: String,
    pub agent_id: i64,
    pub agent: String,
    pub cron: String,
    pub objective: String,
    pub paused: bool,
    pub skip_missed: bool,
    pub next_run_at_ms: Option<i64>,
    pub last_run_at_ms: Option<i64>,
    pub created_at_ms: i64,
}

impl From<ScheduleRow> for Schedule {
    fn from(row: ScheduleRow) -> Schedule {
        Schedule {
            id: row.id,
            agent: row.agent,
            cron: row.cron,
            objective: row.objective,
            paused: row.paused,
            skip_missed: row.skip_missed,
            next_run_at_ms: row.next_run_at_ms,
            last_run_at_ms: row.last_run_at_ms,
            created_at_ms: row.created_at_ms,
        }
    }
}

/// What a due slot does.
#[derive(Debug, Clone, Copy)]
pub enum Firing<'a> {
    /// Queue the job in `workspace`; `missed` if the slot passed while the daemon was down.
    Run { workspace: &'a str, missed: bool },
    /// Let the slot go by, for this reason.
    Skip { reason: &'a str },
}

/// What [`Store::fire_schedule`] did.
#[derive(Debug)]
pub enum FireOutcome {
    /// The id of the task it queued.
    Fired(String),
    Skipped,
    /// The schedule changed since it was read (paused, removed, agent deleted, already
    /// fired): nothing was written.
    Stale,
}

/// The schedule columns, the same text on both backends.
pub(super) const SELECT_SCHEDULE: &str = "SELECT s.id, s.agent_id, a.name AS agent, s.cron, \
    s.objective, s.paused, s.skip_missed, s.next_run_at_ms, s.last_run_at_ms, s.created_at_ms \
    FROM schedules s JOIN agents a ON a.id = s.agent_id WHERE a.deleted_at_ms IS NULL";

impl ScheduleRow {
    /// Schedule events go to the agent's chat thread.
    pub(super) fn chat<'a>(&'a self, thread: &'a str) -> Target<'a> {
        Target {
            agent_id: self.agent_id,
            agent: &self.agent,
            thread,
            task: None,
        }
    }
}
