//! Schedules: a cron expression that queues the same job for its agent at every slot.
//!
//! The store keeps each schedule's next slot (`next_run_at_ms`, `NULL` while paused); the
//! timer in `agent::schedules` decides what a due slot does and computes the next one. Every
//! change appends an event to the agent's chat thread in the same transaction. A firing
//! creates its task in that transaction too, and only if the schedule is still active and
//! still due at the slot the timer read, so a pause, a removal or an agent deletion racing
//! the timer never lets a stale slot fire. A deleted agent's schedules are invisible (every
//! read joins live agents) and never fire.

use lazyboy_protocol::{EventBody, Schedule};
use sqlx::{Connection, SqliteConnection};

use super::events::{Target, insert};
use super::{Store, StoreError, now_ms};

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

const SELECT_SCHEDULE: &str = "SELECT s.id, s.agent_id, a.name AS agent, s.cron, s.objective, \
                               s.paused, s.skip_missed, s.next_run_at_ms, s.last_run_at_ms, \
                               s.created_at_ms \
                               FROM schedules s JOIN agents a ON a.id = s.agent_id \
                               WHERE a.deleted_at_ms IS NULL";

/// Active: not paused, with a next slot, of a live agent.
const ACTIVE: &str = "s.paused = 0 AND s.next_run_at_ms IS NOT NULL";

impl Store {
    /// Adds a schedule for the live agent `agent` and logs `schedule_added`.
    pub async fn create_schedule(
        &self,
        agent: &str,
        cron: &str,
        objective: &str,
        skip_missed: bool,
        next_run_at_ms: Option<i64>,
    ) -> Result<ScheduleRow, StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let (agent_id, thread): (i64, String) = sqlx::query_as(
            "SELECT a.id, t.id FROM agents a JOIN threads t ON t.agent_id = a.id \
             AND t.kind = 'chat' WHERE a.name = ? AND a.deleted_at_ms IS NULL",
        )
        .bind(agent)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| StoreError::NoSuchAgent(agent.to_owned()))?;
        let row = ScheduleRow {
            id: format!("s-{}", uuid::Uuid::now_v7().simple()),
            agent_id,
            agent: agent.to_owned(),
            cron: cron.to_owned(),
            objective: objective.to_owned(),
            paused: false,
            skip_missed,
            next_run_at_ms,
            last_run_at_ms: None,
            created_at_ms: now_ms(),
        };
        sqlx::query(
            "INSERT INTO schedules (id, agent_id, cron, objective, paused, skip_missed, \
             next_run_at_ms, created_at_ms) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
        )
        .bind(&row.id)
        .bind(agent_id)
        .bind(cron)
        .bind(objective)
        .bind(skip_missed)
        .bind(next_run_at_ms)
        .bind(row.created_at_ms)
        .execute(&mut *tx)
        .await?;
        let body = EventBody::ScheduleAdded {
            schedule: row.id.clone(),
            cron: cron.to_owned(),
            objective: objective.to_owned(),
            skip_missed,
        };
        let event = insert(&mut tx, &chat(&row, &thread), &body).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        Ok(row)
    }

    /// Schedules of live agents (of one, by name, if given), oldest first.
    pub async fn schedules(&self, agent: Option<&str>) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!(
            "{SELECT_SCHEDULE} AND (?1 IS NULL OR a.name = ?1) ORDER BY s.created_at_ms, s.id"
        );
        Ok(sqlx::query_as(&sql)
            .bind(agent)
            .fetch_all(&self.inner.reader)
            .await?)
    }

    /// The schedule with this id.
    pub async fn schedule(&self, id: &str) -> Result<ScheduleRow, StoreError> {
        let sql = format!("{SELECT_SCHEDULE} AND s.id = ?");
        sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(&self.inner.reader)
            .await?
            .ok_or_else(|| StoreError::NoSuchSchedule(id.to_owned()))
    }

    /// Removes a schedule (its events stay in the log) and logs `schedule_removed`.
    pub async fn delete_schedule(&self, id: &str) -> Result<(), StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let (row, thread) = locked(&mut tx, id).await?;
        sqlx::query("DELETE FROM schedules WHERE id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let body = EventBody::ScheduleRemoved {
            schedule: row.id.clone(),
        };
        let event = insert(&mut tx, &chat(&row, &thread), &body).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        Ok(())
    }

    /// Pauses (`next_run_at_ms` = `None`) or resumes (from `next_run_at_ms`) a schedule, and
    /// logs `schedule_paused` / `schedule_resumed`. Pausing a paused schedule, or resuming an
    /// active one, changes nothing and logs nothing.
    pub async fn set_schedule_paused(
        &self,
        id: &str,
        paused: bool,
        next_run_at_ms: Option<i64>,
    ) -> Result<ScheduleRow, StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let (mut row, thread) = locked(&mut tx, id).await?;
        if row.paused == paused {
            return Ok(row);
        }
        row.paused = paused;
        row.next_run_at_ms = if paused { None } else { next_run_at_ms };
        sqlx::query("UPDATE schedules SET paused = ?, next_run_at_ms = ? WHERE id = ?")
            .bind(row.paused)
            .bind(row.next_run_at_ms)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let schedule = row.id.clone();
        let body = if paused {
            EventBody::SchedulePaused { schedule }
        } else {
            EventBody::ScheduleResumed { schedule }
        };
        let event = insert(&mut tx, &chat(&row, &thread), &body).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        Ok(row)
    }

    /// The earliest next slot of the active schedules of live agents.
    pub async fn next_schedule_due(&self) -> Result<Option<i64>, StoreError> {
        let sql = format!(
            "SELECT MIN(s.next_run_at_ms) FROM schedules s JOIN agents a ON a.id = s.agent_id \
             WHERE a.deleted_at_ms IS NULL AND {ACTIVE}"
        );
        Ok(sqlx::query_scalar(&sql)
            .fetch_one(&self.inner.reader)
            .await?)
    }

    /// Active schedules whose next slot is at or before `now_ms`, earliest first.
    pub async fn due_schedules(&self, now_ms: i64) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!(
            "{SELECT_SCHEDULE} AND {ACTIVE} AND s.next_run_at_ms <= ? \
             ORDER BY s.next_run_at_ms, s.id"
        );
        Ok(sqlx::query_as(&sql)
            .bind(now_ms)
            .fetch_all(&self.inner.reader)
            .await?)
    }

    /// Handles the due slot of `schedule` (as read by [`Store::due_schedules`]): queues its
    /// task (or skips the slot), moves it to `next_run_at_ms`, and logs `schedule_fired` (or
    /// `schedule_skipped`), all in one transaction. Writes nothing if the schedule is no
    /// longer active at that slot.
    pub async fn fire_schedule(
        &self,
        schedule: &ScheduleRow,
        firing: Firing<'_>,
        next_run_at_ms: Option<i64>,
    ) -> Result<FireOutcome, StoreError> {
        let Some(due_at_ms) = schedule.next_run_at_ms else {
            return Ok(FireOutcome::Stale);
        };
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let current = match locked(&mut tx, &schedule.id).await {
            Ok(found) => found,
            Err(StoreError::NoSuchSchedule(_)) => return Ok(FireOutcome::Stale),
            Err(other) => return Err(other),
        };
        let (row, thread) = current;
        if row.paused || row.next_run_at_ms != Some(due_at_ms) {
            return Ok(FireOutcome::Stale);
        }
        let mut events = Vec::with_capacity(2);
        let (outcome, body, last_run) = match firing {
            Firing::Run { workspace, missed } => {
                let (task, event) =
                    Store::insert_task(&mut tx, &row.agent, &row.objective, workspace).await?;
                events.push(event);
                let body = EventBody::ScheduleFired {
                    schedule: row.id.clone(),
                    task: task.id.clone(),
                    due_at_ms,
                    missed,
                };
                (FireOutcome::Fired(task.id), body, Some(now_ms()))
            }
            Firing::Skip { reason } => {
                let body = EventBody::ScheduleSkipped {
                    schedule: row.id.clone(),
                    due_at_ms,
                    reason: reason.to_owned(),
                };
                (FireOutcome::Skipped, body, None)
            }
        };
        sqlx::query(
            "UPDATE schedules SET next_run_at_ms = ?, \
             last_run_at_ms = COALESCE(?, last_run_at_ms) WHERE id = ?",
        )
        .bind(next_run_at_ms)
        .bind(last_run)
        .bind(&row.id)
        .execute(&mut *tx)
        .await?;
        events.push(insert(&mut tx, &chat(&row, &thread), &body).await?);
        tx.commit().await?;
        for event in events {
            self.inner.bus.publish(event);
        }
        Ok(outcome)
    }
}

/// The schedule `id` of a live agent, with the agent's chat thread, read on the writer's
/// open transaction.
async fn locked(
    conn: &mut SqliteConnection,
    id: &str,
) -> Result<(ScheduleRow, String), StoreError> {
    let sql = format!("{SELECT_SCHEDULE} AND s.id = ?");
    let row: ScheduleRow = sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| StoreError::NoSuchSchedule(id.to_owned()))?;
    let thread: String =
        sqlx::query_scalar("SELECT id FROM threads WHERE agent_id = ? AND kind = 'chat'")
            .bind(row.agent_id)
            .fetch_one(&mut *conn)
            .await?;
    Ok((row, thread))
}

/// Schedule events go to the agent's chat thread.
fn chat<'a>(row: &'a ScheduleRow, thread: &'a str) -> Target<'a> {
    Target {
        agent_id: row.agent_id,
        agent: &row.agent,
        thread,
        task: None,
    }
}
