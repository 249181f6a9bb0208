use super::*;

fn call(id: &str) -> ToolCallRecord {
    ToolCallRecord {
        id: id.into(),
        name: "exec_command".into(),
        arguments: "{}".into(),
    }
}

#[test]
fn finds_unanswered_and_started_calls() {
    let events = vec![
        EventBody::TaskCreated {
            objective: "do it".into(),
            workspace: "/w".into(),
        },
        EventBody::AssistantReply {
            text: String::new(),
            tool_calls: vec![call("a"), call("b"), call("c")],
        },
        EventBody::ToolCall {
            call_id: "a".into(),
            name: "exec_command".into(),
            arguments: "{}".into(),
            effect: None,
        },
        EventBody::ToolResult {
            call_id: "a".into(),
            name: "exec_command".into(),
            status: ToolStatus::Ok,
            output: "fine".into(),
            progress: false,
        },
        EventBody::ToolCall {
            call_id: "b".into(),
            name: "exec_command".into(),
            arguments: "{}".into(),
            effect: Some(Effect::Command),
        },
    ];
    let history = History::from_events(&events);
    assert_eq!(history.rounds, 1);
    assert!(history.acted);
    let unanswered: Vec<_> = history.unanswered.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(unanswered, ["b", "c"]);
    assert!(history.started.contains("b") && !history.started.contains("c"));
    assert_eq!(history.messages.len(), 3);
}

#[test]
fn a_replayed_guard_counts_what_the_live_guard_counted() {
    use crate::agent::fuse::{Fuse, LoopGuard};
    // Six waits that each brought new output, with the same arguments and text.
    let mut events = vec![EventBody::TaskCreated {
        objective: "watch".into(),
        workspace: "/w".into(),
    }];
    for i in 0..6 {
        let id = format!("w{i}");
        let record = ToolCallRecord {
            id: id.clone(),
            name: "write_stdin".into(),
            arguments: "{\"id\":\"cmd-1\",\"chars\":\"ping\\n\"}".into(),
        };
        events.push(EventBody::AssistantReply {
            text: String::new(),
            tool_calls: vec![record],
        });
        events.push(EventBody::ToolCall {
            call_id: id.clone(),
            name: "write_stdin".into(),
            arguments: "{}".into(),
            effect: Some(Effect::Command),
        });
        events.push(EventBody::ToolResult {
            call_id: id,
            name: "write_stdin".into(),
            status: ToolStatus::Ok,
            output: "ping".into(),
            progress: true,
        });
    }
    let history = History::from_events(&events);
    let mut replayed = LoopGuard::default();
    for input in &history.guard {
        if let GuardInput::Result {
            effect,
            call,
            output,
            failed,
            progress,
        } = input
        {
            let fuse = replayed.record(
                *effect,
                &call.name,
                &call.arguments,
                output,
                *failed,
                *progress,
            );
            assert_eq!(
                fuse,
                Fuse::Continue,
                "progress is never a loop, live or replayed"
            );
        }
    }
    assert_eq!(history.guard.len(), 6);
}
