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

use super::StoreError;
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

super::facade! {
    /// Adds a schedule for the live agent `agent` and logs `schedule_added`.
    pub async fn create_schedule(
        &self,
        agent: &str,
        cron: &str,
        objective: &str,
        skip_missed: bool,
        next_run_at_ms: Option<i64>,
    ) -> Result<ScheduleRow, StoreError>;

    /// Schedules of live agents (of one, by name, if given), oldest first.
    pub async fn schedules(&self, agent: Option<&str>) -> Result<Vec<ScheduleRow>, StoreError>;

    /// The schedule with this id.
    pub async fn schedule(&self, id: &str) -> Result<ScheduleRow, StoreError>;

    /// Removes a schedule (its events stay in the log) and logs `schedule_removed`.
    pub async fn delete_schedule(&self, id: &str) -> Result<(), StoreError>;

    /// Pauses (`next_run_at_ms` = `None`) or resumes (from `next_run_at_ms`) a schedule, and
    /// logs `schedule_paused` / `schedule_resumed`. Pausing a paused schedule, or resuming an
    /// active one, changes nothing and logs nothing.
    pub async fn set_schedule_paused(
        &self,
        id: &str,
        paused: bool,
        next_run_at_ms: Option<i64>,
    ) -> Result<ScheduleRow, StoreError>;

    /// The earliest next slot of the active schedules of live agents.
    pub async fn next_schedule_due(&self) -> Result<Option<i64>, StoreError>;

    /// Active schedules whose next slot is at or before `now_ms`, earliest first.
    pub async fn due_schedules(&self, now_ms: i64) -> Result<Vec<ScheduleRow>, StoreError>;

    /// Handles the due slot of `schedule` (as read by [`Store::due_schedules`]): queues its
    /// task (or skips the slot), moves it to `next_run_at_ms`, and logs `schedule_fired` (or
    /// `schedule_skipped`), all in one transaction. Writes nothing if the schedule is no
    /// longer active at that slot.
    pub async fn fire_schedule(
        &self,
        schedule: &ScheduleRow,
        firing: Firing<'_>,
        next_run_at_ms: Option<i64>,
    ) -> Result<FireOutcome, StoreError>;
}
