//! The control tools: they change the task itself, so the loop handles them.
//!
//! - `update_plan` {plan: [{step, status}], explanation?}: at most one step `in_progress`.
//! - `send_message` {text}: the only voice the person hears.
//! - `report_done` {summary, evidence, files?}: alone in its batch; refused while plan steps
//!   are open or commands still run; listed files must exist inside the workspace.
//! - `report_blocked` {reason, alternatives}: alone in its batch.
//!
//! The checks are plain functions over the task's state.

use std::path::Path;

use lazyboy_protocol::{PlanStep, StepStatus};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::providers::ToolDef;
use crate::tools::workspace;

pub const UPDATE_PLAN: &str = "update_plan";
pub const SEND_MESSAGE: &str = "send_message";
pub const REPORT_DONE: &str = "report_done";
pub const REPORT_BLOCKED: &str = "report_blocked";
pub const REQUEST_USER_INPUT: &str = "request_user_input";
pub const REQUEST_TAKEOVER: &str = "request_takeover";

/// Whether `name` is a control tool.
pub fn is_control(name: &str) -> bool {
    matches!(
        name,
        UPDATE_PLAN
            | SEND_MESSAGE
            | REPORT_DONE
            | REPORT_BLOCKED
            | REQUEST_USER_INPUT
            | REQUEST_TAKEOVER
    ) || super::memory::is_memory(name)
        || super::subagents::is_subagent_tool(name)
}

/// Control tools that end the turn and so must be the only call in their batch.
pub fn must_be_alone(name: &str) -> bool {
    matches!(
        name,
        REPORT_DONE | REPORT_BLOCKED | REQUEST_USER_INPUT | REQUEST_TAKEOVER
    )
}

/// Control tools that wait for the person.
pub fn asks_the_person(name: &str) -> bool {
    matches!(name, REQUEST_USER_INPUT | REQUEST_TAKEOVER)
}

/// The control tools' definitions for the model.
pub fn specs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: UPDATE_PLAN.into(),
            description: "Record your plan for a task with several steps. Send the whole plan \
                          each time; mark at most one step in_progress. Skip it for simple \
                          questions."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "plan": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }},
                    "explanation": {"type": "string", "description": "Why the plan changed."}
                },
                "required": ["plan"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: SEND_MESSAGE.into(),
            description: "Say something to the person. This is the ONLY way they hear you: \
                          plain reply text is your private scratchpad. Use it for the answer, \
                          for important progress, and when you finish."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: REPORT_DONE.into(),
            description: "Declare the task complete, with a summary and the evidence you \
                          verified (commands run, their output, files checked). Call it alone, \
                          only when every plan step is completed and no command is still \
                          running. List the deliverable files (paths in the workspace)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string"},
                    "evidence": {"type": "string"},
                    "files": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["summary", "evidence"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: REPORT_BLOCKED.into(),
            description: "Stop because you cannot go on without the person: say why, and what \
                          they could do instead. Call it alone."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "reason": {"type": "string"},
                    "alternatives": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["reason", "alternatives"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: REQUEST_USER_INPUT.into(),
            description: "Ask the person a question you cannot answer yourself (a choice, a \
                          missing fact, a confirmation before something irreversible) and wait \
                          for the answer. Call it alone. Give options when there are a few \
                          clear choices."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "options": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["question"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: REQUEST_TAKEOVER.into(),
            description: "Hand control to the person for a step only they can do (log in, a \
                          2FA code, a captcha, an authorization) and wait until they say it is \
                          done. Call it alone, with precise instructions."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "enum": ["login", "2fa", "captcha", "authorization", "other"]},
                    "instructions": {"type": "string"}
                },
                "required": ["reason", "instructions"],
                "additionalProperties": false
            }),
        },
    ]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestUserInput {
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestTakeover {
    pub reason: String,
    pub instructions: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdatePlan {
    pub plan: Vec<PlanStep>,
    #[serde(default)]
    pub explanation: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    pub text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportDone {
    pub summary: String,
    pub evidence: String,
    #[serde(default)]
    pub files: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportBlocked {
    pub reason: String,
    pub alternatives: Vec<String>,
}

/// Parses a control tool's arguments, with an error the model can act on.
pub fn parse<T: for<'de> Deserialize<'de>>(name: &str, args: Value) -> Result<T, String> {
    serde_json::from_value(args).map_err(|e| format!("invalid arguments for {name}: {e}"))
}

/// Checks a new plan: at most one step in progress, no empty steps.
pub fn check_plan(plan: &[PlanStep]) -> Result<(), String> {
    if let Some(empty) = plan.iter().position(|s| s.step.trim().is_empty()) {
        return Err(format!("plan step {} has no text", empty + 1));
    }
    let in_progress = plan
        .iter()
        .filter(|s| s.status == StepStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(format!(
            "{in_progress} steps are in_progress; at most one may be. Mark the others pending \
             or completed."
        ));
    }
    Ok(())
}

/// Checks `report_done` against the task's state; `Err` explains what must happen first.
pub fn check_done(
    report: &ReportDone,
    plan: &[PlanStep],
    running_commands: &[String],
    workspace_root: &Path,
) -> Result<(), String> {
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
    for file in &report.files {
        let path = workspace::resolve(workspace_root, file)
            .map_err(|e| format!("report_done refused: {e}"))?;
        if !path.exists() {
            return Err(format!(
                "report_done refused: the listed file {file} does not exist in the workspace"
            ));
        }
    }
    Ok(())
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
    fn at_most_one_step_in_progress() {
        use StepStatus::*;
        assert!(check_plan(&[step("a", InProgress), step("b", Pending)]).is_ok());
        let error = check_plan(&[step("a", InProgress), step("b", InProgress)]).unwrap_err();
        assert!(error.contains("2 steps are in_progress"));
        assert!(check_plan(&[step(" ", Pending)]).is_err());
    }

    #[test]
    fn done_is_refused_while_work_is_open() {
        use StepStatus::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("out.txt"), "x").unwrap();
        let report = ReportDone {
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
        assert!(check_done(&report, &closed, &[], &root).is_ok());
        let missing = ReportDone {
            files: vec!["nope.txt".into()],
            ..report
        };
        assert!(
            check_done(&missing, &closed, &[], &root)
                .unwrap_err()
                .contains("does not exist")
        );
        let outside = ReportDone {
            files: vec!["../../etc/passwd".into()],
            ..missing
        };
        assert!(check_done(&outside, &closed, &[], &root).is_err());
    }
}
