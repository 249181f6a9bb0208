//! `report_done` {summary, evidence, files?} and `report_blocked` {reason, alternatives}:
//! the verdicts. Control, each alone in its reply: it ends the turn.
//!
//! `report_done` is refused while plan steps are open, commands or subagents still run, or a
//! listed file is not in the workspace; the refusal says what must happen first.

use futures_util::future::BoxFuture;
use lazyboy_protocol::{Deliverable, EventBody, PlanStep, StepStatus, Verdict};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::workspace::{PathError, Root};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, TurnEnd, respond};

pub const DONE: &str = "report_done";
pub const BLOCKED: &str = "report_blocked";

pub struct ReportDone;
pub struct ReportBlocked;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Done {
    pub summary: String,
    pub evidence: String,
    #[serde(default)]
    pub files: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Blocked {
    reason: String,
    alternatives: Vec<String>,
}

impl ToolHandler for ReportDone {
    fn name(&self) -> &str {
        DONE
    }

    fn description(&self) -> &str {
        "Declare the task complete, with a summary and the evidence you verified (commands run, \
         their output, files checked). Call it alone, only when every plan step is completed \
         and no command is still running. List the deliverable files (paths in the workspace)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "summary": {"type": "string"},
                "evidence": {"type": "string"},
                "files": {"type": "array", "items": {"type": "string"}}
            }),
            &["summary", "evidence"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn alone(&self) -> bool {
        true
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let report: Done = parse(self, args)?;
            let live = ctx.scope.live_subagents().await?;
            if !live.is_empty() {
                return Err(respond(format!(
                    "report_done refused: subagents are still running: {}. End your turn \
                     (reply without tool calls) to be woken with their results, or stop them \
                     (stop_subagent).",
                    live.join(", ")
                )));
            }
            let plan = ctx.scope.plan().await?;
            let running = ctx.scope.running_commands();
            let files = check_done(&report, &plan, &running, &ctx.workspace).map_err(respond)?;
            if !files.is_empty() {
                ctx.scope.record(EventBody::Deliverables { files }).await?;
            }
            let mut message = report.summary.trim().to_owned();
            if !report.files.is_empty() {
                message.push_str(&format!("\nFiles: {}", report.files.join(", ")));
            }
            message.push_str(&format!("\nEvidence: {}", report.evidence.trim()));
            Ok(Handled::EndTurn {
                output: Some("accepted".into()),
                end: TurnEnd::Verdict(Verdict::Done, message),
            })
        })
    }
}

impl ToolHandler for ReportBlocked {
    fn name(&self) -> &str {
        BLOCKED
    }

    fn description(&self) -> &str {
        "Stop because you cannot go on without the person: say why, and what they could do \
         instead. Call it alone."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "reason": {"type": "string"},
                "alternatives": {"type": "array", "items": {"type": "string"}}
            }),
            &["reason", "alternatives"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn alone(&self) -> bool {
        true
    }

    fn handle<'a>(&'a self, _ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let report: Blocked = parse(self, args)?;
            let mut message = report.reason.trim().to_owned();
            if !report.alternatives.is_empty() {
                message.push_str(&format!(
                    "\nAlternatives: {}",
                    report.alternatives.join("; ")
                ));
            }
            Ok(Handled::EndTurn {
                output: Some("recorded".into()),
                end: TurnEnd::Verdict(Verdict::Blocked, message),
            })
        })
    }
}

/// Checks `report_done` against the task's state; `Err` explains what must happen first.
/// `Ok` lists the deliverables with their sizes: each a readable regular file inside the
/// workspace.
pub fn check_done(
    report: &Done,
    plan: &[PlanStep],
    running_commands: &[String],
    workspace: &Root,
) -> Result<Vec<Deliverable>, String> {
    let open: Vec<&str> = plan
        .iter()
        .filter(|s| s.status != StepStatus::Completed)
        .map(|s| s.step.as_str())
        .collect();
    if !open.is_empty() {
        return Err(format!(
            "report_done refused: these plan steps are not completed: {}. Finish them (and \
             mark them completed with update_plan), or update the plan if they no longer apply.",
            open.join("; ")
        ));
    }
    if !running_commands.is_empty() {
        return Err(format!(
            "report_done refused: commands are still running: {}. Wait for them \
             (await_command) or stop them (kill_command) first.",
            running_commands.join(", ")
        ));
    }
    if report.summary.trim().is_empty() || report.evidence.trim().is_empty() {
        return Err("report_done refused: give a summary and the evidence you checked".into());
    }
    let mut files = Vec::with_capacity(report.files.len());
    for file in &report.files {
        let path = workspace
            .rel(file)
            .map_err(|e| format!("report_done refused: {e}"))?;
        // Opened beneath the workspace: a file that leads out through a symlink is refused.
        match workspace.open_file(&path) {
            Ok((_, size)) => files.push(Deliverable {
                path: path.shown(),
                size,
            }),
            Err(PathError::NotFound(_)) => {
                return Err(format!(
                    "report_done refused: the listed file {file} does not exist in the \
                     workspace; list files you created (paths relative to the workspace)"
                ));
            }
            Err(PathError::IsDir(_) | PathError::NotFile(_)) => {
                return Err(format!(
                    "report_done refused: {file} is not a regular file (a directory?); list the \
                     files themselves"
                ));
            }
            Err(PathError::Io { source, .. }) => {
                return Err(format!(
                    "report_done refused: {file} cannot be read: {source}"
                ));
            }
            Err(other) => return Err(format!("report_done refused: {other}")),
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(text: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            step: text.into(),
            status,
        }
    }

    #[test]
    fn done_is_refused_while_work_is_open() {
        use StepStatus::*;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        std::fs::write(path.join("out.txt"), "x").unwrap();
        let root = Root::open(&path).unwrap();
        let report = Done {
            summary: "did it".into(),
            evidence: "cat out.txt".into(),
            files: vec!["out.txt".into()],
        };
        let open = [step("write", Completed), step("verify", InProgress)];
        let error = check_done(&report, &open, &[], &root).unwrap_err();
        assert!(error.contains("not completed: verify"), "{error}");
        let closed = [step("write", Completed), step("verify", Completed)];
        let error = check_done(&report, &closed, &["cmd-1".into()], &root).unwrap_err();
        assert!(error.contains("still running: cmd-1"));
        let files = check_done(&report, &closed, &[], &root).unwrap();
        assert_eq!(
            files,
            [Deliverable {
                path: "out.txt".into(),
                size: 1
            }]
        );
        std::fs::create_dir(path.join("dir")).unwrap();
        let dir = Done {
            files: vec!["dir".into()],
            summary: "s".into(),
            evidence: "e".into(),
        };
        assert!(
            check_done(&dir, &closed, &[], &root)
                .unwrap_err()
                .contains("not a regular file")
        );
        let missing = Done {
            files: vec!["nope.txt".into()],
            ..report
        };
        assert!(
            check_done(&missing, &closed, &[], &root)
                .unwrap_err()
                .contains("does not exist")
        );
        let outside = Done {
            files: vec!["../../etc/passwd".into()],
            ..missing
        };
        assert!(check_done(&outside, &closed, &[], &root).is_err());
    }
}
