//! Schedules at work: the timer that fires them, and its rules as plain functions.
//!
//! One tokio task, spawned on the runtime's tracker by [`Runtime::start`], sleeps until the
//! earliest `next_run_at_ms` of the active schedules or until [`Timer::poke`] (add, remove,
//! pause, resume), and ends on the daemon's shutdown token. A due slot queues one task for
//! the schedule's agent in its default workspace and moves the schedule to its first slot
//! strictly after *now* (not after the slot that fired), so however many slots went by, a
//! schedule catches up with at most one run. Task, schedule update and `schedule_fired` are
//! one transaction (see `store::schedules`).
//!
//! Cron expressions are read by `croner` with crontab's grammar (five fields, or six with
//! seconds first; day-of-month and day-of-week are OR-ed as in Vixie cron) and evaluated in
//! the daemon's local time zone, as crontab does; croner resolves DST gaps and repeats.
//!
//! Missed slots: at start, every due slot went by while the daemon was down; while running,
//! a slot handled more than [`LATE_GRACE_MS`] late went by while the machine slept (tokio's
//! monotonic clock stops during suspend, which is also why one sleep never exceeds
//! [`MAX_SLEEP`]: the timer then reads the wall clock again and does nothing unless a slot is
//! due). A missed slot runs once, unless the schedule says `skip_missed` or the config says
//! `[schedules] run_missed = false`: then it is skipped and logged `schedule_skipped`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Local, TimeZone};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::Runtime;
use crate::store::{FireOutcome, Firing, ScheduleRow, StoreError, now_ms};

/// How late a slot may be handled, while the daemon runs, before it counts as missed.
pub const LATE_GRACE_MS: i64 = 60_000;

/// The longest single sleep: the wall clock is read again at least this often.
pub const MAX_SLEEP: Duration = Duration::from_secs(60);

/// How long the timer waits after the store failed, before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why a cron expression was refused.
#[derive(Debug, thiserror::Error)]
pub enum CronExprError {
    #[error(
        "invalid cron expression {expr:?}: {reason}. Use five fields (minute hour day-of-month \
         month day-of-week, e.g. \"*/15 * * * *\"), or six with seconds first (e.g. \
         \"*/10 * * * * *\")"
    )]
    Invalid { expr: String, reason: String },
    #[error("the cron expression {0:?} matches no time from now on")]
    Never(String),
}

/// Parses a crontab expression: five fields, or six with seconds first; `@daily` and friends.
pub fn parse(expr: &str) -> Result<Cron, CronExprError> {
    parser()
        .parse(expr)
        .map_err(|error| CronExprError::Invalid {
            expr: expr.to_owned(),
            reason: explain(expr, &error),
        })
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
}

/// croner's message, naming the field at fault when one field alone is.
fn explain(expr: &str, error: &croner::errors::CronError) -> String {
    let message = error.to_string();
    let message = message
        .trim_start_matches("Invalid pattern: ")
        .trim_start_matches("Component error: ")
        .trim_end_matches('.');
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let names: &[&str] = match fields.len() {
        5 => &["minute", "hour", "day-of-month", "month", "day-of-week"],
        6 => &[
            "second",
            "minute",
            "hour",
            "day-of-month",
            "month",
            "day-of-week",
        ],
        0 => return "it is empty".to_owned(),
        1 if !expr.trim_start().starts_with('@') => return "it has 1 field".to_owned(),
        n if !expr.trim_start().starts_with('@') => return format!("it has {n} fields"),
        _ => return message.to_owned(),
    };
    for (i, (field, name)) in fields.iter().zip(names).enumerate() {
        let mut probe = vec!["*"; fields.len()];
        probe[i] = field;
        if parser().parse(&probe.join(" ")).is_err() {
            return format!("the {name} field {field:?}: {message}");
        }
    }
    message.to_owned()
}

/// The first slot of `cron` strictly after `after_ms`, read on the wall clock of `tz`; `None`
/// if there is none.
pub fn next_after<Tz: TimeZone>(cron: &Cron, after_ms: i64, tz: &Tz) -> Option<i64> {
    let after = DateTime::from_timestamp_millis(after_ms)?.with_timezone(tz);
    // Exclusive: croner starts at the second after `after`'s second.
    let next = cron.find_next_occurrence(&after, false).ok()?;
    Some(next.timestamp_millis())
}

/// Parses `expr` and returns its first slot after `now_ms` in the local time zone: the check
/// a new or resumed schedule passes.
pub fn first_slot(expr: &str, now_ms: i64) -> Result<i64, CronExprError> {
    let cron = parse(expr)?;
    next_after(&cron, now_ms, &Local).ok_or_else(|| CronExprError::Never(expr.to_owned()))
}

/// What a due slot does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Queue the job; `missed` if the slot went by while the daemon could not act.
    Run { missed: bool },
    /// Let the slot go (it was missed and missed runs are not wanted).
    Skip,
}

/// The rule for a slot due at `due_ms`, looked at `now_ms`: `None` if it is not due yet.
/// `first_pass`: the timer's first look since the daemon started. `run_missed`: the config's
/// `run_missed` and not the schedule's `skip_missed`.
pub fn slot(due_ms: i64, now_ms: i64, first_pass: bool, run_missed: bool) -> Option<Slot> {
    if due_ms > now_ms {
        return None;
    }
    let missed = first_pass || now_ms - due_ms > LATE_GRACE_MS;
    Some(if missed && !run_missed {
        Slot::Skip
    } else {
        Slot::Run { missed }
    })
}

/// The timer's doorbell, held by the runtime: routes ring it after changing a schedule.
#[derive(Debug, Default)]
pub struct Timer {
    wake: Notify,
}

impl Timer {
    /// Makes the timer read the schedules again (a permit is stored if it is busy).
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

/// The timer loop; returns when the daemon shuts down.
pub(super) async fn run(runtime: Arc<Runtime>) {
    let run_missed = runtime.config.file.schedules.run_missed();
    let mut first_pass = true;
    loop {
        let pause = match fire_due(&runtime, first_pass, run_missed).await {
            Ok(()) => {
                first_pass = false;
                until_next(&runtime).await
            }
            Err(error) => {
                tracing::error!(%error, "schedules: cannot fire due slots");
                RETRY_AFTER
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(Instant::now() + pause) => {}
            () = runtime.schedules.wake.notified() => {}
            () = runtime.shutdown.cancelled() => return,
        }
    }
}

/// How long to sleep before the earliest slot (at most [`MAX_SLEEP`]).
async fn until_next(runtime: &Runtime) -> Duration {
    match runtime.store.next_schedule_due().await {
        Ok(Some(at)) => {
            let wait = u64::try_from(at.saturating_sub(now_ms())).unwrap_or(0);
            Duration::from_millis(wait).min(MAX_SLEEP)
        }
        Ok(None) => MAX_SLEEP,
        Err(error) => {
            tracing::error!(%error, "schedules: cannot read the next slot");
            RETRY_AFTER
        }
    }
}

/// Handles every due slot, then wakes the task scheduler if a task was queued.
async fn fire_due(runtime: &Runtime, first_pass: bool, run_missed: bool) -> Result<(), StoreError> {
    let now = now_ms();
    let mut queued = false;
    for row in runtime.store.due_schedules(now).await? {
        if runtime.shutdown.is_cancelled() {
            break;
        }
        queued |= fire_one(runtime, &row, now, first_pass, run_missed).await?;
    }
    if queued {
        runtime.enqueue();
    }
    Ok(())
}

/// Handles one due schedule; `true` if it queued a task.
async fn fire_one(
    runtime: &Runtime,
    row: &ScheduleRow,
    now: i64,
    first_pass: bool,
    run_missed: bool,
) -> Result<bool, StoreError> {
    let Some(due) = row.next_run_at_ms else {
        return Ok(false);
    };
    let cron = match parse(&row.cron) {
        Ok(cron) => cron,
        Err(error) => {
            // Stored by an older build that accepted it: stop it rather than spin on it.
            tracing::error!(schedule = %row.id, %error, "schedule stopped: cannot read its cron");
            let firing = Firing::Skip {
                reason: &error.to_string(),
            };
            runtime.store.fire_schedule(row, firing, None).await?;
            return Ok(false);
        }
    };
    let next = next_after(&cron, now, &Local);
    let Some(decision) = slot(due, now, first_pass, run_missed && !row.skip_missed) else {
        return Ok(false);
    };
    // Ok: where the task goes; Err: why the slot is let go.
    let plan = match decision {
        Slot::Run { missed } => match runtime.store.agent(&row.agent).await {
            Ok(agent) => runtime
                .agent_workspace(&agent)
                .map(|dir| (dir.display().to_string(), missed))
                .map_err(|e| format!("cannot create the agent's workspace: {e}")),
            Err(e) => Err(e.to_string()),
        },
        Slot::Skip => {
            Err("missed: the daemon was down (or the machine asleep) at its time".to_owned())
        }
    };
    let firing = match &plan {
        Ok((workspace, missed)) => Firing::Run {
            workspace,
            missed: *missed,
        },
        Err(reason) => Firing::Skip { reason },
    };
    let outcome = runtime.store.fire_schedule(row, firing, next).await?;
    let span = tracing::info_span!("schedule", schedule = %row.id, agent = %row.agent);
    let _entered = span.enter();
    match outcome {
        FireOutcome::Fired(task) => {
            tracing::info!(%task, due, ?next, "schedule fired");
            Ok(true)
        }
        FireOutcome::Skipped => {
            let reason = plan.err().unwrap_or_default();
            tracing::info!(due, ?next, %reason, "schedule slot skipped");
            Ok(false)
        }
        FireOutcome::Stale => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use chrono::{FixedOffset, Utc};

    use super::*;

    fn ms(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn five_and_six_field_expressions_parse_and_bad_ones_say_why() {
        for good in ["* * * * *", "*/2 * * * * *", "0 9 * * MON-FRI", "@daily"] {
            assert!(parse(good).is_ok(), "{good}");
        }
        for bad in ["", "every day", "61 * * * *", "* * *", "* * * * * * 2030"] {
            let error = parse(bad).unwrap_err().to_string();
            assert!(error.contains("invalid cron expression"), "{bad}: {error}");
            assert!(error.contains("five fields"), "{bad}: {error}");
        }
        let error = parse("0 25 * * *").unwrap_err().to_string();
        assert!(error.contains("the hour field \"25\""), "{error}");
        let error = parse("*/0 * * * * *").unwrap_err().to_string();
        assert!(error.contains("the second field \"*/0\""), "{error}");
    }

    #[test]
    fn the_next_slot_is_strictly_after_the_given_time() {
        let cron = parse("*/2 * * * * *").unwrap();
        let on_slot = ms("2026-11-30T12:00:00Z");
        assert_eq!(next_after(&cron, on_slot, &Utc), Some(on_slot + 2000));
        assert_eq!(next_after(&cron, on_slot - 1, &Utc), Some(on_slot));
        assert_eq!(next_after(&cron, on_slot + 999, &Utc), Some(on_slot + 2000));

        let minutely = parse("* * * * *").unwrap();
        let at = ms("2026-11-30T12:00:30.500Z");
        assert_eq!(
            next_after(&minutely, at, &Utc),
            Some(ms("2026-11-30T12:01:00Z"))
        );
    }

    #[test]
    fn slots_are_read_on_the_wall_clock_of_the_time_zone() {
        let nine = parse("0 9 * * *").unwrap();
        let paris = FixedOffset::east_opt(3600).unwrap();
        let at = ms("2026-11-30T06:00:00Z");
        assert_eq!(
            next_after(&nine, at, &Utc),
            Some(ms("2026-11-30T09:00:00Z"))
        );
        assert_eq!(
            next_after(&nine, at, &paris),
            Some(ms("2026-11-30T08:00:00Z"))
        );
    }

    #[test]
    fn an_impossible_expression_has_no_slot() {
        let never = parse("0 0 30 2 *").unwrap();
        assert_eq!(next_after(&never, ms("2026-11-30T00:00:00Z"), &Utc), None);
        assert!(matches!(
            first_slot("0 0 30 2 *", 0),
            Err(CronExprError::Never(_))
        ));
    }

    #[test]
    fn a_slot_is_due_at_its_time_and_not_before() {
        assert_eq!(slot(1000, 999, false, true), None);
        assert_eq!(
            slot(1000, 1000, false, true),
            Some(Slot::Run { missed: false })
        );
        assert_eq!(
            slot(1000, 1500, false, false),
            Some(Slot::Run { missed: false })
        );
    }

    #[test]
    fn missed_slots_run_once_unless_skipped() {
        // At start every due slot was missed.
        assert_eq!(
            slot(1000, 1001, true, true),
            Some(Slot::Run { missed: true })
        );
        assert_eq!(slot(1000, 1001, true, false), Some(Slot::Skip));
        // While running, only a slot handled long after its time (the machine slept).
        let late = 1000 + LATE_GRACE_MS + 1;
        assert_eq!(
            slot(1000, late, false, true),
            Some(Slot::Run { missed: true })
        );
        assert_eq!(slot(1000, late, false, false), Some(Slot::Skip));
        assert_eq!(
            slot(1000, 1000 + LATE_GRACE_MS, false, false),
            Some(Slot::Run { missed: false })
        );
    }

    /// The timer's whole catch-up, without IO: a minutely schedule last due seven slots ago
    /// runs once at start and lands on the next slot after now.
    #[test]
    fn downtime_across_many_slots_gives_one_run() {
        let cron = parse("* * * * *").unwrap();
        let now = ms("2026-11-30T12:07:30Z");
        let mut due = ms("2026-11-30T12:00:00Z");
        let mut runs = 0;
        let mut first_pass = true;
        while let Some(decision) = slot(due, now, first_pass, true) {
            assert_eq!(decision, Slot::Run { missed: true });
            runs += 1;
            due = next_after(&cron, now, &Utc).unwrap();
            first_pass = false;
        }
        assert_eq!(runs, 1);
        assert_eq!(due, ms("2026-11-30T12:08:00Z"));
    }
}
