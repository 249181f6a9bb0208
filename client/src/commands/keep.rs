//! `lazyboy backup`, `restore`, `export` and `retention run`: keeping a person's work.
//!
//! Backup, export and retention ask the running daemon (the token on every request, as for
//! every verb). Restore must not: it runs `lazyboyd --restore FILE` on the home, which takes
//! the home's lock itself, so it is refused while a daemon runs there and no daemon can
//! start while it works.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hyper::Method;
use lazyboy_protocol::{BackupMade, BackupRequest, RetentionReport, RetentionRequest};

use crate::connection::Client;
use crate::daemon_proc;

fn size(bytes: u64) -> String {
    match bytes {
        b if b < 10 * 1024 => format!("{b} B"),
        b if b < 10 * 1024 * 1024 => format!("{} KB", b / 1024),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

pub async fn backup(
    client: &Client,
    file: Option<PathBuf>,
    with_secrets: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let path = file
        .map(|f| std::path::absolute(&f).with_context(|| format!("cannot resolve {}", f.display())))
        .transpose()?;
    let request = BackupRequest {
        path: path.map(|p| p.display().to_string()),
        with_secrets,
    };
    let made: BackupMade = client
        .call(Method::POST, "/api/backup", Some(&request))
        .await?;
    if json {
        println!("{}", serde_json::to_string(&made)?);
    } else {
        let c = &made.manifest.counts;
        println!(
            "{} ({}, {} ms): {} events up to seq {}, {} agents, {} tasks, {} memories, {} \
             schedules{}",
            made.path,
            size(made.bytes),
            made.took_ms,
            c.events,
            c.last_seq,
            c.agents,
            c.tasks,
            c.memories,
            c.schedules,
            if made.manifest.with_secrets {
                "; with the token (keep it private)"
            } else {
                ""
            }
        );
    }
    Ok(0)
}

/// Runs `lazyboyd --home HOME --restore FILE` with this terminal; its exit code is ours.
pub fn restore(client: &Client, file: &Path) -> anyhow::Result<i32> {
    let file =
        std::path::absolute(file).with_context(|| format!("cannot resolve {}", file.display()))?;
    let daemon = daemon_proc::daemon_path()?;
    let status = std::process::Command::new(&daemon)
        .arg("--home")
        .arg(client.home())
        .arg("--restore")
        .arg(&file)
        .status()
        .with_context(|| format!("cannot run {}", daemon.display()))?;
    Ok(status.code().unwrap_or(1))
}

pub async fn export(
    client: &Client,
    task: &str,
    format: &str,
    output: Option<PathBuf>,
) -> anyhow::Result<i32> {
    let text = client
        .get_text(&format!("/api/tasks/{task}/export?format={format}"))
        .await?;
    match output {
        Some(path) => {
            std::fs::write(&path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} ({})", path.display(), size(text.len() as u64));
        }
        None => print!("{text}"),
    }
    Ok(0)
}

pub async fn retention(
    client: &Client,
    dry_run: bool,
    days: Option<u32>,
    json: bool,
) -> anyhow::Result<i32> {
    let request = RetentionRequest { dry_run, days };
    let report: RetentionReport = client
        .call(Method::POST, "/api/retention/run", Some(&request))
        .await?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(0);
    }
    let freed = report.bytes_before.saturating_sub(report.bytes_after);
    if report.dry_run {
        println!(
            "would replace {} tool outputs of {} tasks ended over {} days ago with stubs, \
             freeing {} of the log ({} now)",
            report.results,
            report.tasks,
            report.days,
            size(freed),
            size(report.file_bytes_before)
        );
    } else {
        println!(
            "replaced {} tool outputs of {} tasks ended over {} days ago with stubs ({} freed); \
             the database went from {} to {} in {} ms",
            report.results,
            report.tasks,
            report.days,
            size(freed),
            size(report.file_bytes_before),
            size(report.file_bytes_after),
            report.took_ms
        );
    }
    Ok(0)
}
