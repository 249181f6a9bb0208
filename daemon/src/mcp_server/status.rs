//! A task as an MCP client sees it: folded from the task's row and its events (the open
//! question or approval, the plan, the latest sign of work, the deliverables), and rendered
//! as the text a model reads beside the `structuredContent`. Pure: no IO.

use lazyboy_protocol::mcp_server::{OpenQuestion, TeamTask, file_uri};
use lazyboy_protocol::{BoxLockAction, EventBody, PlanStep, StepStatus, Task, TaskState};

/// The status of `task` from its events (oldest first).
pub fn fold<'a>(task: Task, events: impl IntoIterator<Item = &'a EventBody>) -> TeamTask {
    let mut question = None;
    let mut plan = Vec::new();
    let mut progress = None;
    let mut deliverables = Vec::new();
    for body in events {
        match body {
            EventBody::Question {
                question: text,
                options,
                approval,
                ..
            } => {
                question = Some(OpenQuestion {
                    text: text.clone(),
                    options: options.clone(),
                    approval: approval.as_deref().cloned(),
                });
            }
            // Its result (the answer, a denial, a stop) closes the question.
            EventBody::ToolResult { .. } | EventBody::ApprovalDecided { .. } => question = None,
            EventBody::PlanUpdated { steps, .. } => plan.clone_from(steps),
            EventBody::Deliverables { files } => deliverables.clone_from(files),
            other => {
                if let Some(line) = progress_line(other) {
                    progress = Some(line);
                }
            }
        }
    }
    let waiting = task.state == TaskState::WaitingForHuman;
    TeamTask {
        task: task.id,
        agent: task.agent,
        objective: task.objective,
        state: task.state,
        verdict: task.verdict,
        final_message: task.final_message,
        question: question.filter(|_| waiting),
        plan,
        progress,
        deliverables,
        timed_out: false,
    }
}

/// What an event says about the work in progress, as one line (`None`: nothing to report).
pub fn progress_line(body: &EventBody) -> Option<String> {
    match body {
        EventBody::Heartbeat {
            operation,
            elapsed_ms,
        } => Some(format!("{operation} ({} s)", elapsed_ms / 1000)),
        EventBody::ToolCall { name, .. } => Some(format!("running {name}")),
        EventBody::AssistantReply { tool_calls, .. } if tool_calls.is_empty() => {
            Some("the model answered".to_owned())
        }
        EventBody::BoxLock {
            action: BoxLockAction::Queued,
            holder,
            ..
        } => Some(match holder.as_ref() {
            Some(h) if h.person => "waiting in line for the box (a person holds it)".to_owned(),
            Some(h) => format!(
                "waiting in line for the box (held by {})",
                h.agent.as_deref().unwrap_or("another task")
            ),
            None => "waiting in line for the box".to_owned(),
        }),
        EventBody::BoxLock {
            action: BoxLockAction::Acquired,
            ..
        } => Some("using the box".to_owned()),
        EventBody::TaskState { state } => Some(match state {
            TaskState::Queued => "queued (behind the agent's current task, if any)".to_owned(),
            TaskState::Running => "running".to_owned(),
            TaskState::Recovering => "recovering after a daemon restart".to_owned(),
            other => other.as_str().to_owned(),
        }),
        EventBody::AgentMessage { text } => Some(format!("said: {}", clip(text, 200))),
        EventBody::SubagentSpawned { objective, .. } => {
            Some(format!("started a subagent: {}", clip(objective, 200)))
        }
        _ => None,
    }
}

/// The plan step in progress, as "step 2/5: write the report".
pub fn current_step(plan: &[PlanStep]) -> Option<String> {
    let index = plan
        .iter()
        .position(|s| s.status == StepStatus::InProgress)?;
    Some(format!(
        "step {}/{}: {}",
        index + 1,
        plan.len(),
        clip(&plan[index].step, 200)
    ))
}

/// The text a model reads for a task's status.
pub fn text(status: &TeamTask) -> String {
    let mut out = format!(
        "task {} (agent {}): {}",
        status.task,
        status.agent,
        status.state.as_str()
    );
    if let Some(verdict) = status.verdict {
        out.push_str(&format!(
            ", verdict {}",
            serde_json::to_value(verdict)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ));
    }
    if status.timed_out {
        out.push_str(" (the wait ran out; call wait_task again to keep waiting)");
    }
    out.push('\n');
    if let Some(message) = &status.final_message {
        out.push_str(&format!("final message: {message}\n"));
    }
    if let Some(question) = &status.question {
        match &question.approval {
            Some(approval) => out.push_str(&format!(
                "waiting for approval: {} (approve_call or deny_call)\n",
                approval.summary
            )),
            None => out.push_str(&format!(
                "question (answer with answer_task): {}\n",
                question.text
            )),
        }
        for (n, option) in question.options.iter().enumerate() {
            out.push_str(&format!("  option {}: {option}\n", n + 1));
        }
    }
    if !status.plan.is_empty() {
        out.push_str("plan:\n");
        for step in &status.plan {
            let mark = match step.status {
                StepStatus::Completed => "[x]",
                StepStatus::InProgress => "[>]",
                StepStatus::Pending => "[ ]",
            };
            out.push_str(&format!("  {mark} {}\n", step.step));
        }
    }
    if let Some(progress) = &status.progress
        && !status.state.is_final()
    {
        out.push_str(&format!("progress: {progress}\n"));
    }
    for file in &status.deliverables {
        out.push_str(&format!(
            "file: {} ({} bytes) {}\n",
            file.path,
            file.size,
            file_uri(&status.task, &file.path)
        ));
    }
    out
}

/// At most `max` characters of `text`, marked when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lazyboy_protocol::{Deliverable, ToolStatus, Usage};

    fn task(state: TaskState) -> Task {
        Task {
            id: "t1".into(),
            agent: "researcher".into(),
            thread: "th".into(),
            objective: "compile the report".into(),
            workspace: "/w".into(),
            state,
            verdict: None,
            final_message: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            parent: None,
            heartbeat_at_ms: None,
            lease_expires_at_ms: None,
            usage: Usage::default(),
            node: None,
        }
    }

    fn question() -> EventBody {
        EventBody::Question {
            call_id: "c1".into(),
            question: "Which format?".into(),
            options: vec!["pdf".into(), "md".into()],
            takeover: None,
            approval: None,
        }
    }

    #[test]
    fn an_open_question_shows_only_while_the_task_waits_and_until_answered() {
        let events = [question()];
        let waiting = fold(task(TaskState::WaitingForHuman), &events);
        let open = waiting.question.as_ref().unwrap();
        assert_eq!(open.text, "Which format?");
        assert_eq!(open.options, ["pdf", "md"]);
        assert!(
            text(&waiting).contains("option 2: md"),
            "{}",
            text(&waiting)
        );
        // Marked waiting a moment after the question: not yet an open question.
        assert!(fold(task(TaskState::Running), &events).question.is_none());
        let answered = [
            question(),
            EventBody::ToolResult {
                call_id: "c1".into(),
                name: "request_user_input".into(),
                status: ToolStatus::Ok,
                output: "md".into(),
                progress: false,
            },
        ];
        assert!(
            fold(task(TaskState::WaitingForHuman), &answered)
                .question
                .is_none()
        );
    }

    #[test]
    fn plan_progress_and_files_are_the_latest_ones() {
        let step = |s: &str, status| PlanStep {
            step: s.into(),
            status,
        };
        let events = [
            EventBody::PlanUpdated {
                steps: vec![step("a", StepStatus::InProgress)],
                explanation: None,
            },
            EventBody::PlanUpdated {
                steps: vec![
                    step("a", StepStatus::Completed),
                    step("b", StepStatus::InProgress),
                ],
                explanation: None,
            },
            EventBody::Heartbeat {
                operation: "waiting for the model".into(),
                elapsed_ms: 40_500,
            },
            EventBody::Deliverables {
                files: vec![Deliverable {
                    path: "out/r e.md".into(),
                    size: 3,
                }],
            },
        ];
        let status = fold(task(TaskState::Running), &events);
        assert_eq!(status.plan.len(), 2);
        assert_eq!(current_step(&status.plan).unwrap(), "step 2/2: b");
        assert_eq!(
            status.progress.as_deref(),
            Some("waiting for the model (40 s)")
        );
        let shown = text(&status);
        assert!(shown.contains("[>] b"), "{shown}");
        assert!(
            shown.contains("lazyboy://tasks/t1/files/out/r%20e.md"),
            "{shown}"
        );
    }

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
    }
}
