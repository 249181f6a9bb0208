//! Schedules, once for both engines. A firing reads the schedule again inside its write
//! (SQLite: on the one writer; PostgreSQL: after taking the log's lock) and writes only if
//! it is still active at the slot the timer read, so of several daemons' timers due at the
//! same slot exactly one fires it; the others find it moved (`Stale`).

use lazyboy_protocol::EventBody;

use super::events::insert;
use super::tasks::insert_task;
use crate::store::dialect::{Conn, on, read, write};
use crate::store::schedules::{FireOutcome, Firing, SELECT_SCHEDULE, ScheduleRow};
use crate::store::{Store, StoreError, now_ms};

/// Active: not paused, with a next slot, of a live agent.
const ACTIVE: &str = "NOT s.paused AND s.next_run_at_ms IS NOT NULL";

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
        let id = format!("s-{}", uuid::Uuid::now_v7().simple());
        Ok(write!(self, |tx| {
            let added = sqlx::query(
                "INSERT INTO schedules (id, agent_id, cron, objective, paused, skip_missed, \
                 next_run_at_ms, created_at_ms) SELECT $1, id, $2, $3, FALSE, $4, $5, $6 \
                 FROM agents WHERE name = $7 AND deleted_at_ms IS NULL",
            )
            .bind(&id)
            .bind(cron)
            .bind(objective)
            .bind(skip_missed)
            .bind(next_run_at_ms)
            .bind(now_ms())
            .bind(agent)
            .execute(&mut *tx)
            .await?;
            if added.rows_affected() == 0 {
                return Err(StoreError::NoSuchAgent(agent.to_owned()));
            }
            let (row, thread) = locked(&mut *tx, &id).await?;
            let body = EventBody::ScheduleAdded {
                schedule: id,
                cron: cron.to_owned(),
                objective: objective.to_owned(),
                skip_missed,
            };
            let event = insert(&mut *tx, &row.chat(&thread), &body).await?;
            (row, [event])
        }))
    }

    /// Schedules of live agents (of one, by name, if given), oldest first.
    pub async fn schedules(&self, agent: Option<&str>) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!(
            "{SELECT_SCHEDULE} AND (CAST($1 AS TEXT) IS NULL OR a.name = $1) ORDER BY s.created_at_ms, s.id"
        );
        Ok(read!(self, |c| sqlx::query_as(&sql)
            .bind(agent)
            .fetch_all(c)
            .await?))
    }

    /// The schedule with this id.
    pub async fn schedule(&self, id: &str) -> Result<ScheduleRow, StoreError> {
        let sql = format!("{SELECT_SCHEDULE} AND s.id = $1");
        read!(self, |c| sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(c)
            .await?)
        .ok_or_else(|| StoreError::NoSuchSchedule(id.to_owned()))
    }

    /// Removes a schedule (its events stay in the log) and logs `schedule_removed`.
    pub async fn delete_schedule(&self, id: &str) -> Result<(), StoreError> {
        write!(self, |tx| {
            let (row, thread) = locked(&mut *tx, id).await?;
            sqlx::query("DELETE FROM schedules WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let body = EventBody::ScheduleRemoved {
                schedule: row.id.clone(),
            };
            let event = insert(&mut *tx, &row.chat(&thread), &body).await?;
            ((), [event])
        });
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
        Ok(write!(self, |tx| {
            let (mut row, thread) = locked(&mut *tx, id).await?;
            if row.paused == paused {
                return Ok(row);
            }
            row.paused = paused;
            row.next_run_at_ms = if paused { None } else { next_run_at_ms };
            sqlx::query("UPDATE schedules SET paused = $1, next_run_at_ms = $2 WHERE id = $3")
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
            let event = insert(&mut *tx, &row.chat(&thread), &body).await?;
            (row, [event])
        }))
    }

    /// The earliest next slot of the active schedules of live agents.
    pub async fn next_schedule_due(&self) -> Result<Option<i64>, StoreError> {
        let sql = format!(
            "SELECT MIN(s.next_run_at_ms) FROM schedules s JOIN agents a ON a.id = s.agent_id \
             WHERE a.deleted_at_ms IS NULL AND {ACTIVE}"
        );
        Ok(read!(self, |c| sqlx::query_scalar(&sql)
            .fetch_one(c)
            .await?))
    }

    /// Active schedules whose next slot is at or before `now_ms`, earliest first.
    pub async fn due_schedules(&self, now_ms: i64) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!(
            "{SELECT_SCHEDULE} AND {ACTIVE} AND s.next_run_at_ms <= $1 \
             ORDER BY s.next_run_at_ms, s.id"
        );
        Ok(read!(self, |c| sqlx::query_as(&sql)
            .bind(now_ms)
            .fetch_all(c)
            .await?))
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
        Ok(write!(self, |tx| {
            let current = match locked(&mut *tx, &schedule.id).await {
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
                        insert_task(&mut *tx, &row.agent, &row.objective, workspace).await?;
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
                "UPDATE schedules SET next_run_at_ms = $1, \
             last_run_at_ms = COALESCE($2, last_run_at_ms) WHERE id = $3",
            )
            .bind(next_run_at_ms)
            .bind(last_run)
            .bind(&row.id)
            .execute(&mut *tx)
            .await?;
            events.push(insert(&mut *tx, &row.chat(&thread), &body).await?);
            (outcome, events)
        }))
    }
}

/// The schedule `id` of a live agent, with the agent's chat thread, read on the writer's
/// open transaction.
async fn locked<'c>(
    conn: impl Into<Conn<'c>>,
    id: &str,
) -> Result<(ScheduleRow, String), StoreError> {
    let sql = format!("{SELECT_SCHEDULE} AND s.id = $1");
    on!(conn.into(), |c| {
        let row: ScheduleRow = sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(&mut *c)
            .await?
            .ok_or_else(|| StoreError::NoSuchSchedule(id.to_owned()))?;
        let thread: String =
            sqlx::query_scalar("SELECT id FROM threads WHERE agent_id = $1 AND kind = 'chat'")
                .bind(row.agent_id)
                .fetch_one(&mut *c)
                .await?;
        Ok((row, thread))
    })
}
