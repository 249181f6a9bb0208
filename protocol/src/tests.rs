use super::*;

#[test]
fn agent_names() {
    for ok in ["a", "researcher", "ops-2", "x_y", "0", &"a".repeat(64)] {
        assert!(valid_agent_name(ok), "{ok}");
    }
    for bad in ["", "-a", "_a", "A", "ops!", "a b", "é", &"a".repeat(65)] {
        assert!(!valid_agent_name(bad), "{bad}");
    }
}

#[test]
fn bodies_round_trip_through_kind_and_data() {
    let body = EventBody::UserMessage { text: "hi".into() };
    assert_eq!(body.kind(), "user_message");
    assert_eq!(body.data(), serde_json::json!({"text": "hi"}));
    assert_eq!(
        EventBody::from_parts("user_message", body.data()),
        Some(body)
    );
    let deleted = EventBody::AgentDeleted {};
    assert_eq!(deleted.data(), serde_json::json!({}));
    assert_eq!(
        EventBody::from_parts(deleted.kind(), deleted.data()),
        Some(deleted)
    );
    assert_eq!(
        EventBody::from_parts("from_the_future", serde_json::json!({})),
        None
    );
}

#[test]
fn kind_matches_the_serde_tag_for_every_variant() {
    let bodies = [
        EventBody::TaskCreated {
            objective: "o".into(),
            workspace: "/w".into(),
        },
        EventBody::TaskState {
            state: TaskState::WaitingForHuman,
        },
        EventBody::AssistantDelta { text: "t".into() },
        EventBody::AssistantReply {
            text: String::new(),
            tool_calls: vec![],
        },
        EventBody::ToolCall {
            call_id: "c".into(),
            name: "n".into(),
            arguments: "{}".into(),
            effect: Some(Effect::Read),
        },
        EventBody::ToolResult {
            call_id: "c".into(),
            name: "n".into(),
            status: ToolStatus::Unknown,
            output: "o".into(),
            progress: true,
        },
        EventBody::PlanUpdated {
            steps: vec![],
            explanation: None,
        },
        EventBody::AgentMessage { text: "t".into() },
        EventBody::RuntimeNote { text: "t".into() },
        EventBody::Question {
            call_id: "c".into(),
            question: "which?".into(),
            options: vec!["a".into()],
            takeover: None,
            approval: None,
        },
        EventBody::Question {
            call_id: "c".into(),
            question: "run `make`?".into(),
            options: APPROVAL_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            takeover: None,
            approval: Some(Box::new(Approval {
                command: Some("make".into()),
                ..Approval::new(
                    "exec_command",
                    Effect::Command,
                    "run `make`".into(),
                    "{}".into(),
                )
            })),
        },
        EventBody::ApprovalDecided {
            call_id: "c".into(),
            decision: Decision::Deny,
            reason: Some("not now".into()),
        },
        EventBody::Heartbeat {
            operation: "model".into(),
            elapsed_ms: 20_000,
        },
        EventBody::TaskFinished {
            verdict: Verdict::BudgetExhausted,
            message: "m".into(),
        },
        EventBody::AgentUpdated {
            instructions: "i".into(),
            model: None,
            workspace: Some("/w".into()),
            mcp: vec!["time".into()],
        },
        EventBody::ModelUsage {
            model: "m".into(),
            input_tokens: 10,
            cached_tokens: 2,
            output_tokens: 3,
            estimated: false,
        },
        EventBody::Deliverables {
            files: vec![Deliverable {
                path: "a.txt".into(),
                size: 1,
            }],
        },
        EventBody::Summary {
            upto_seq: 9,
            text: "t".into(),
        },
        EventBody::ConversationCleared {},
        EventBody::CommandStarted {
            command_id: "cmd-1".into(),
            command: "sleep 9".into(),
            log: ".lazyboy-output/cmd-1.log".into(),
            pgid: Some(4242),
        },
        EventBody::CommandEnded {
            command_id: "cmd-1".into(),
            status: "exited with code 0".into(),
        },
        EventBody::SubagentSpawned {
            task: "t-1".into(),
            objective: "o".into(),
        },
        EventBody::ScheduleAdded {
            schedule: "s-1".into(),
            cron: "* * * * *".into(),
            objective: "o".into(),
            skip_missed: true,
        },
        EventBody::ScheduleRemoved {
            schedule: "s-1".into(),
        },
        EventBody::SchedulePaused {
            schedule: "s-1".into(),
        },
        EventBody::ScheduleResumed {
            schedule: "s-1".into(),
        },
        EventBody::ScheduleFired {
            schedule: "s-1".into(),
            task: "t-1".into(),
            due_at_ms: 1,
            missed: false,
        },
        EventBody::ScheduleSkipped {
            schedule: "s-1".into(),
            due_at_ms: 1,
            reason: "r".into(),
        },
        EventBody::AgentPinned {
            node: Some("n1".into()),
        },
        EventBody::BoxState {
            state: BoxState::Unavailable,
            reason: Some("no engine".into()),
        },
        EventBody::BoxLock {
            action: BoxLockAction::Queued,
            agent: "a".into(),
            task: "t-1".into(),
            person: false,
            holder: Some(BoxHolder {
                person: true,
                task: None,
                agent: None,
                since_ms: 1,
            }),
        },
        EventBody::ToolImage {
            call_id: "c".into(),
            path: ".lazyboy-output/c.png".into(),
            media_type: "image/png".into(),
        },
    ];
    for body in bodies {
        let tagged = serde_json::to_value(&body).unwrap();
        assert_eq!(tagged["kind"], body.kind());
        assert_eq!(EventBody::from_parts(body.kind(), body.data()), Some(body));
    }
}

#[test]
fn verdict_exit_codes_and_states() {
    let table = [
        (Verdict::Answer, 0, TaskState::Done),
        (Verdict::Done, 0, TaskState::Done),
        (Verdict::Waiting, 0, TaskState::Done),
        (Verdict::Blocked, 1, TaskState::Blocked),
        (Verdict::BudgetExhausted, 1, TaskState::BudgetExhausted),
        (Verdict::Failed, 1, TaskState::Failed),
        (Verdict::Cancelled, 130, TaskState::Cancelled),
    ];
    for (verdict, code, state) in table {
        assert_eq!((verdict.exit_code(), verdict.final_state()), (code, state));
        assert_eq!(TaskState::parse(state.as_str()), Some(state));
    }
}
