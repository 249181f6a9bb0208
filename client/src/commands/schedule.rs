//! `lazyboy schedule add|ls|rm|pause|resume`: cron schedules that hand an agent a job.
//!
//! The daemon owns the schedules and fires them; this only edits and shows them. Times are
//! shown in the local time zone, the one the daemon reads the expressions in.

use chrono::{DateTime, Local, TimeZone};
use hyper::Method;
use lazyboy_protocol::{CreateSchedule, Schedule, ScheduleList};

use crate::cli::ScheduleCommand;
use crate::connection::Client;
use crate::render::{clean, one_line};

pub async fn run(client: &Client, command: ScheduleCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        ScheduleCommand::Add {
            agent,
            cron,
            job,
            skip_missed,
        } => {
            let request = CreateSchedule {
                cron,
                objective: job,
                skip_missed,
            };
            let path = format!("/api/agents/{agent}/schedules");
            let schedule: Schedule = client.call(Method::POST, &path, Some(&request)).await?;
            if json {
                println!("{}", serde_json::to_string(&schedule)?);
            } else {
                println!(
                    "added schedule {} for {}; next run {}",
                    schedule.id,
                    schedule.agent,
                    next_run(&schedule, &Local)
                );
            }
        }
        ScheduleCommand::Ls { agent } => {
            let path = match agent {
                Some(agent) => format!("/api/schedules?agent={agent}"),
                None => "/api/schedules".to_owned(),
            };
            let list: ScheduleList = client.get(&path).await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                print!("{}", table(&list.schedules, &Local));
            }
        }
        ScheduleCommand::Rm { id } => {
            let path = format!("/api/schedules/{id}");
            client
                .call::<serde_json::Value>(Method::DELETE, &path, None::<&()>)
                .await?;
            if !json {
                println!("removed schedule {id}");
            }
        }
        ScheduleCommand::Pause { id } => {
            let path = format!("/api/schedules/{id}/pause");
            let schedule: Schedule = client.call(Method::POST, &path, None::<&()>).await?;
            if json {
                println!("{}", serde_json::to_string(&schedule)?);
            } else {
                println!("paused schedule {}", schedule.id);
            }
        }
        ScheduleCommand::Resume { id } => {
            let path = format!("/api/schedules/{id}/resume");
            let schedule: Schedule = client.call(Method::POST, &path, None::<&()>).await?;
            if json {
                println!("{}", serde_json::to_string(&schedule)?);
            } else {
                println!(
                    "resumed schedule {}; next run {}",
                    schedule.id,
                    next_run(&schedule, &Local)
                );
            }
        }
    }
    Ok(0)
}

/// The next run on the wall clock of `tz`, `-` while paused, `never` without a future slot.
fn next_run<Tz: TimeZone>(schedule: &Schedule, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    match schedule.next_run_at_ms {
        _ if schedule.paused => "-".to_owned(),
        Some(ms) => DateTime::from_timestamp_millis(ms)
            .map(|at| at.with_timezone(tz).format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|| ms.to_string()),
        None => "never".to_owned(),
    }
}

/// Schedules as an aligned table; the job comes last, on one line.
fn table<Tz: TimeZone>(schedules: &[Schedule], tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let header = ["ID", "AGENT", "CRON", "STATE", "NEXT RUN"];
    let rows: Vec<[String; 5]> = schedules
        .iter()
        .map(|s| {
            let state = if s.paused { "paused" } else { "active" };
            [
                s.id.clone(),
                s.agent.clone(),
                clean(&s.cron),
                state.to_owned(),
                next_run(s, tz),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|row| row[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str], job: &str| {
        let mut out = String::new();
        for (cell, width) in cells.iter().zip(&widths) {
            out.push_str(&format!("{cell:<width$}  "));
        }
        out.push_str(job);
        out.push('\n');
        out
    };
    let mut out = line(&header, "JOB");
    for (row, schedule) in rows.iter().zip(schedules) {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&cells, &one_line(&schedule.objective)));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use chrono::FixedOffset;

    use super::*;

    fn schedule(id: &str, cron: &str, paused: bool, next: Option<i64>) -> Schedule {
        Schedule {
            id: id.into(),
            agent: "ops".into(),
            cron: cron.into(),
            objective: "check\nthe   backups".into(),
            paused,
            skip_missed: false,
            next_run_at_ms: next,
            last_run_at_ms: None,
            created_at_ms: 0,
        }
    }

    #[test]
    fn the_table_is_aligned_and_shows_the_next_run_on_the_local_clock() {
        // 2026-11-30T12:00:00Z, shown two hours east.
        let at = 1_796_040_000_000;
        let tz = FixedOffset::east_opt(2 * 3600).unwrap();
        let text = table(
            &[
                schedule("s-1", "0 9 * * MON-FRI", false, Some(at)),
                schedule("s-22", "@hourly", true, None),
            ],
            &tz,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].contains("2026-11-30 14:00:00"), "{text}");
        assert!(lines[1].ends_with("check the backups"), "{text}");
        assert!(
            lines[2].contains("paused") && lines[2].contains(" - "),
            "{text}"
        );
        let column = |line: &str, word: &str| line.find(word).unwrap();
        assert_eq!(column(lines[0], "CRON"), column(lines[1], "0 9"));
        assert_eq!(column(lines[0], "JOB"), column(lines[2], "check"));
    }
}
