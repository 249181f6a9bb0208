//! A task as a record that stands alone (`GET /api/tasks/{id}/export`, `lazyboy export`):
//! folded from the task's events in the log's order, with the files the log only names
//! (spilled outputs, screenshots, deliverables) read beneath the workspace as they are now.
//!
//! Spilled outputs are included whole up to [`SPILL_CAP`] each and [`TOTAL_CAP`] in all;
//! past that the export names them in `omitted`. Files are opened through the workspace's
//! `Root` (never a path followed out of it), so an export cannot be made to read elsewhere.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

use lazyboy_protocol::{
    EXPORT_FORMAT, Event, EventBody, ExportEntry, ExportFile, ExportPlan, ExportSpill,
    ExportVerdict, RemovedOutput, Task, TaskExport,
};

use super::KeepError;
use super::archive::sha256_of;
use crate::store::{EventFilter, Store, StoreError, now_ms};
use crate::tools::workspace::{OUTPUT_DIR, Root};

/// The most of one spilled output an export includes.
pub const SPILL_CAP: u64 = 8 * 1024 * 1024;
/// The most of all spilled outputs together.
pub const TOTAL_CAP: u64 = 32 * 1024 * 1024;

/// The spill file a result names ("the whole output is in .lazyboy-output/NAME ..."), if any.
fn spill_name(output: &str) -> Option<String> {
    let marker = format!("the whole output is in {OUTPUT_DIR}/");
    let start = output.find(&marker)? + marker.len() - OUTPUT_DIR.len() - 1;
    let name: String = output[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    Some(name)
}

/// Every event of the task, oldest first.
async fn events(store: &Store, id: &str) -> Result<Vec<Event>, StoreError> {
    let filter = EventFilter {
        agent_id: None,
        task: Some(id.into()),
    };
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(after, &filter, 1000).await?;
        let Some(last) = page.last() else {
            return Ok(out);
        };
        after = last.seq;
        out.extend(
            page.iter()
                .filter_map(|e| serde_json::from_str::<Event>(e.json()).ok()),
        );
    }
}

/// A file of the workspace, described as it is now.
fn describe(root: Option<&Root>, path: &str) -> ExportFile {
    let missing = |why: String| ExportFile {
        path: path.to_owned(),
        bytes: 0,
        sha256: None,
        missing: Some(why),
    };
    let Some(root) = root else {
        return missing("the workspace is gone".to_owned());
    };
    let opened = root
        .rel(path)
        .map_err(|e| e.to_string())
        .and_then(|rel| root.open_file(&rel).map_err(|e| e.to_string()));
    match opened {
        Ok((mut file, _)) => match sha256_of(&mut file) {
            Ok((bytes, sha)) => ExportFile {
                path: path.to_owned(),
                bytes,
                sha256: Some(sha),
                missing: None,
            },
            Err(e) => missing(e.to_string()),
        },
        Err(e) => missing(e),
    }
}

/// Reads a spilled output up to `cap` bytes.
fn read_spill(root: Option<&Root>, path: &str, cap: u64) -> Result<ExportSpill, String> {
    let root = root.ok_or("the workspace is gone")?;
    let rel = root.rel(path).map_err(|e| e.to_string())?;
    let (file, bytes) = root.open_file(&rel).map_err(|e| e.to_string())?;
    let mut text = Vec::new();
    file.take(cap)
        .read_to_end(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(ExportSpill {
        path: path.to_owned(),
        bytes,
        truncated: (text.len() as u64) < bytes,
        text: String::from_utf8_lossy(&text).into_owned(),
    })
}

/// The export of task `id`.
pub async fn export(store: &Store, id: &str) -> Result<TaskExport, KeepError> {
    let row = match store.task(id).await {
        Ok(row) => row,
        Err(StoreError::NoSuchTask(_)) => return Err(KeepError::NoSuchTask(id.to_owned())),
        Err(e) => return Err(e.into()),
    };
    let events = events(store, id).await?;
    let task = Task::from(row);
    let workspace = PathBuf::from(&task.workspace);
    tokio::task::spawn_blocking(move || fold(task, &events, Root::open(&workspace).ok()))
        .await
        .map_err(|e| KeepError::Invalid(format!("the export failed: {e}")))
}

/// Folds the events into the export (blocking: it reads the workspace's files).
fn fold(task: Task, events: &[Event], root: Option<Root>) -> TaskExport {
    let root = root.as_ref();
    let mut export = TaskExport {
        format: EXPORT_FORMAT,
        exported_at_ms: now_ms(),
        usage: task.usage.clone(),
        task,
        plans: Vec::new(),
        entries: Vec::new(),
        verdict: None,
        deliverables: Vec::new(),
        omitted: Vec::new(),
    };
    // Where each call's entry (and its question's) is, to attach results and images.
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut questions: HashMap<String, usize> = HashMap::new();
    let mut included: u64 = 0;
    let message = |event: &Event, from: &str, text: &str| ExportEntry::Message {
        seq: event.seq,
        at_ms: event.at_ms,
        from: from.to_owned(),
        text: text.to_owned(),
    };
    for event in events {
        let Some(body) = event.body() else { continue };
        match body {
            EventBody::TaskCreated { objective, .. } => {
                export.entries.push(message(event, "person", &objective));
            }
            EventBody::UserMessage { text } => export.entries.push(message(event, "person", &text)),
            EventBody::AgentMessage { text } => export.entries.push(message(event, "agent", &text)),
            EventBody::RuntimeNote { text } => {
                export.entries.push(message(event, "runtime", &text))
            }
            EventBody::Summary { text, .. } => {
                export
                    .entries
                    .push(message(event, "runtime", &format!("(summary) {text}")));
            }
            EventBody::AssistantReply { text, tool_calls } => {
                if !text.trim().is_empty() {
                    export.entries.push(message(event, "assistant", &text));
                }
                for call in tool_calls {
                    calls.insert(call.id.clone(), export.entries.len());
                    export.entries.push(ExportEntry::ToolCall {
                        seq: event.seq,
                        at_ms: event.at_ms,
                        call_id: call.id,
                        name: call.name,
                        arguments: call.arguments,
                        status: None,
                        result: None,
                        removed: None,
                        spilled: None,
                        images: Vec::new(),
                    });
                }
            }
            EventBody::Question {
                call_id,
                question,
                options,
                ..
            } => {
                questions.insert(call_id.clone(), export.entries.len());
                export.entries.push(ExportEntry::Question {
                    seq: event.seq,
                    at_ms: event.at_ms,
                    call_id,
                    question,
                    options,
                    answer: None,
                });
            }
            EventBody::ToolResult {
                call_id,
                status: new_status,
                output,
                ..
            } => {
                if let Some(ExportEntry::Question { answer, .. }) = questions
                    .get(&call_id)
                    .and_then(|&i| export.entries.get_mut(i))
                {
                    *answer = Some(output.clone());
                }
                let mark: Option<RemovedOutput> = event
                    .data
                    .get("removed")
                    .and_then(|m| serde_json::from_value(m.clone()).ok());
                let spill = spill_name(&output).map(|path| {
                    let room = SPILL_CAP.min(TOTAL_CAP.saturating_sub(included));
                    match read_spill(root, &path, room) {
                        Ok(spill) if room > 0 || spill.bytes == 0 => {
                            included += spill.text.len() as u64;
                            if spill.truncated {
                                export.omitted.push(format!(
                                    "{path}: {} of {} bytes included",
                                    spill.text.len(),
                                    spill.bytes
                                ));
                            }
                            Some(spill)
                        }
                        Ok(spill) => {
                            export
                                .omitted
                                .push(format!("{path}: {} bytes", spill.bytes));
                            None
                        }
                        Err(why) => {
                            export.omitted.push(format!("{path}: {why}"));
                            None
                        }
                    }
                });
                if let Some(ExportEntry::ToolCall {
                    status,
                    result,
                    removed,
                    spilled,
                    ..
                }) = calls.get(&call_id).and_then(|&i| export.entries.get_mut(i))
                {
                    *status = Some(new_status);
                    *result = Some(output);
                    *removed = mark;
                    *spilled = spill.flatten();
                }
            }
            EventBody::ToolImage { call_id, path, .. } => {
                if let Some(ExportEntry::ToolCall { images, .. }) =
                    calls.get(&call_id).and_then(|&i| export.entries.get_mut(i))
                {
                    images.push(describe(root, &path));
                }
            }
            EventBody::PlanUpdated { steps, explanation } => export.plans.push(ExportPlan {
                seq: event.seq,
                at_ms: event.at_ms,
                steps,
                explanation,
            }),
            EventBody::TaskFinished { verdict, message } => {
                export.verdict = Some(ExportVerdict {
                    verdict,
                    message,
                    at_ms: event.at_ms,
                });
            }
            EventBody::Deliverables { files } => {
                export.deliverables = files.iter().map(|f| describe(root, &f.path)).collect();
            }
            _ => {}
        }
    }
    export
}

#[cfg(test)]
mod tests {
    use super::spill_name;

    #[test]
    fn the_spill_file_is_found_in_a_result() {
        let output = "head\n[... 10 bytes omitted; the whole output is in .lazyboy-output/call_1.txt \
                      (read it with read_file offset/limit or search it) ...]\ntail";
        assert_eq!(
            spill_name(output).as_deref(),
            Some(".lazyboy-output/call_1.txt")
        );
        assert_eq!(spill_name("plain"), None);
    }
}
