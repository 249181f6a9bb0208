//! Retention: the bulky bodies of old tool results replaced by a stub, the space reclaimed.
//!
//! Passes are serialized (`Keep::passes`). A result qualifies when its task ended (done, blocked, failed, cancelled, out of budget)
//! more than `tool_output_days` ago and its stored data is over [`MIN_BYTES`]. Its `output`
//! becomes "(removed after N days: K KB)" with a few of its first and last lines, and its
//! data gains `removed` (size, lines, SHA-256, when), so replay, the conversation and the
//! dashboard read the stub as the result. Nothing else in the log is touched: messages,
//! calls and their arguments, plans, verdicts and deliverables stay byte for byte. Each
//! changed task gets a `retention_pass` event with its counts.

use std::collections::BTreeMap;
use std::time::Instant;

use lazyboy_protocol::{EventBody, RemovedOutput, RetentionReport, RetentionRequest};
use serde_json::Value;

use super::archive::sha256;
use super::{Keep, KeepError};
use crate::store::now_ms;

/// Results this small stay: a stub would save little.
pub const MIN_BYTES: i64 = 1024;
/// Lines kept from each end of a removed output, each cut to [`LINE_CHARS`].
const EDGE_LINES: usize = 2;
const LINE_CHARS: usize = 120;
/// Results rewritten per transaction: appends wait at most one batch.
const BATCH: i64 = 500;

/// The stub for `output` removed after `days` at `at_ms`: the new output text and the mark.
pub fn stub(output: &str, days: u32, at_ms: i64) -> (String, RemovedOutput) {
    let bytes = output.len() as u64;
    let lines: Vec<&str> = output.lines().collect();
    let cut = |line: &str| -> String {
        match line.char_indices().nth(LINE_CHARS) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line.to_owned(),
        }
    };
    let mut text = format!("(removed after {days} days: {} KB)", bytes.div_ceil(1024));
    if lines.len() <= EDGE_LINES * 2 {
        for line in &lines {
            text.push('\n');
            text.push_str(&cut(line));
        }
    } else {
        for line in &lines[..EDGE_LINES] {
            text.push('\n');
            text.push_str(&cut(line));
        }
        text.push_str(&format!("\n[… {} lines …]", lines.len() - EDGE_LINES * 2));
        for line in &lines[lines.len() - EDGE_LINES..] {
            text.push('\n');
            text.push_str(&cut(line));
        }
    }
    let mark = RemovedOutput {
        days,
        bytes,
        lines: lines.len() as u64,
        sha256: sha256(output.as_bytes()),
        at_ms,
    };
    (text, mark)
}

/// The stubbed `data` of a stored tool result, or `None` when it is not one.
fn stubbed(data: &str, days: u32, at_ms: i64) -> Option<String> {
    let mut value: Value = serde_json::from_str(data).ok()?;
    let object = value.as_object_mut()?;
    if object.contains_key("removed") {
        return None;
    }
    let output = object.get("output")?.as_str()?;
    let (text, mark) = stub(output, days, at_ms);
    object.insert("output".into(), Value::String(text));
    object.insert("removed".into(), serde_json::to_value(mark).ok()?);
    Some(value.to_string())
}

impl Keep {
    /// One pass as `request` asks (the period from the request, else the config).
    pub async fn retention(
        &self,
        request: &RetentionRequest,
    ) -> Result<RetentionReport, KeepError> {
        let days = request
            .days
            .or(self.retention.tool_output_days)
            .ok_or_else(|| {
                KeepError::Invalid(
                    "retention is off: set [retention] tool_output_days in config.toml, or \
                     pass --days N"
                        .to_owned(),
                )
            })?;
        // One pass at a time (the timer's and a person's would count the same rows).
        let _one = self.passes.lock().await;
        let started = Instant::now();
        let at_ms = now_ms();
        let cutoff = at_ms.saturating_sub(i64::from(days).saturating_mul(86_400_000));
        let file_bytes_before = self.store.database_bytes().await?;
        let mut report = RetentionReport {
            dry_run: request.dry_run,
            days,
            file_bytes_before,
            ..RetentionReport::default()
        };
        let mut per_task: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for task in self.store.ended_tasks_before(cutoff).await? {
            let mut after = 0;
            loop {
                let rows = self
                    .store
                    .retention_batch(&task, after, MIN_BYTES, BATCH)
                    .await?;
                let Some((last, _)) = rows.last() else {
                    break;
                };
                after = *last;
                let mut rewrites = Vec::with_capacity(rows.len());
                for (seq, data) in rows {
                    let Some(new) = stubbed(&data, days, at_ms) else {
                        continue;
                    };
                    if new.len() >= data.len() {
                        continue;
                    }
                    report.results += 1;
                    report.bytes_before += data.len() as u64;
                    report.bytes_after += new.len() as u64;
                    let entry = per_task.entry(task.clone()).or_default();
                    entry.0 += 1;
                    entry.1 += (data.len() - new.len()) as u64;
                    rewrites.push((seq, new));
                }
                if !request.dry_run && !rewrites.is_empty() {
                    self.store.rewrite_results(&rewrites).await?;
                }
            }
        }
        report.tasks = per_task.len() as u64;
        if !request.dry_run && report.results > 0 {
            for (task, (results, bytes_freed)) in &per_task {
                let row = self.store.task(task).await?;
                let body = EventBody::RetentionPass {
                    results: *results,
                    bytes_freed: *bytes_freed,
                    days,
                };
                self.store.append_to_task(&row, &body).await?;
            }
            self.store.reclaim().await?;
        }
        report.file_bytes_after = if request.dry_run {
            file_bytes_before
        } else {
            self.store.database_bytes().await?
        };
        report.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        tracing::info!(
            dry_run = report.dry_run,
            results = report.results,
            tasks = report.tasks,
            freed = report.bytes_before - report.bytes_after,
            file_before = report.file_bytes_before,
            file_after = report.file_bytes_after,
            "retention pass"
        );
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::{stub, stubbed};

    #[test]
    fn a_stub_names_the_size_and_keeps_the_edges() {
        let output: String = (0..100).map(|n| format!("line {n}\n")).collect();
        let (text, mark) = stub(&output, 30, 5);
        assert!(
            text.starts_with("(removed after 30 days: 1 KB)\nline 0\nline 1\n"),
            "{text}"
        );
        assert!(text.ends_with("line 98\nline 99"), "{text}");
        assert!(text.contains("[… 96 lines …]"));
        assert_eq!(
            (mark.bytes, mark.lines, mark.days),
            (output.len() as u64, 100, 30)
        );
        assert_eq!(mark.sha256.len(), 64);
        let long = "é".repeat(500);
        let (text, _) = stub(&long, 1, 0);
        assert!(
            text.lines()
                .nth(1)
                .is_some_and(|l| l.chars().count() == 121)
        );
    }

    #[test]
    fn only_the_output_changes() {
        let data = serde_json::json!({"call_id": "c1", "name": "exec_command", "status": "ok",
            "output": "x\n".repeat(2000)})
        .to_string();
        let new: serde_json::Value = serde_json::from_str(&stubbed(&data, 7, 1).unwrap()).unwrap();
        assert_eq!(new["call_id"], "c1");
        assert_eq!(new["status"], "ok");
        assert_eq!(new["removed"]["bytes"], 4000);
        assert!(
            new["output"]
                .as_str()
                .unwrap()
                .starts_with("(removed after 7 days: 4 KB)")
        );
        assert!(stubbed("{\"text\": 1}", 7, 1).is_none());
    }
}
