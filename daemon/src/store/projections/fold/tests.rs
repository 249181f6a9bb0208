use lazyboy_protocol::{ConversationItem, Effect, ToolStatus};
use serde_json::json;

use super::{Fold, Row};

fn row(seq: i64, kind: &str, task: Option<&str>, data: serde_json::Value) -> Row {
    Row {
        seq,
        kind: kind.into(),
        task: task.map(str::to_owned),
        at_ms: seq * 1000,
        data: data.to_string(),
    }
}

fn call(seq: i64, id: &str, name: &str, effect: &str) -> Row {
    let data = json!({"call_id": id, "name": name, "arguments": "{}", "effect": effect});
    row(seq, "tool_call", Some("t"), data)
}

fn result(seq: i64, id: &str, name: &str, output: &str) -> Row {
    let data = json!({"call_id": id, "name": name, "status": "ok", "output": output});
    row(seq, "tool_result", Some("t"), data)
}

fn fold(rows: &[Row]) -> Vec<ConversationItem> {
    let mut fold = Fold::default();
    for r in rows {
        fold.push(r);
    }
    fold.finish()
}

/// Calls between two things said are one group; the calls behind items are not work.
#[test]
fn work_is_grouped_between_things_said() {
    let items = fold(&[
        call(1, "a", "exec_command", "command"),
        result(2, "a", "exec_command", "hi"),
        call(3, "m", "send_message", "control"),
        row(4, "agent_message", Some("t"), json!({"text": "hello"})),
        result(5, "m", "send_message", "sent"),
        call(6, "b", "exec_command", "command"),
        call(7, "c", "write_file", "workspace_write"),
        result(8, "b", "exec_command", "x"),
        result(9, "c", "write_file", "ok"),
    ]);
    assert_eq!(items.len(), 3, "{items:#?}");
    let ConversationItem::Work(first) = &items[0] else {
        panic!("{items:#?}")
    };
    assert_eq!((first.seq, first.last_seq, first.steps.len()), (1, 2, 1));
    assert!(matches!(&items[1], ConversationItem::AgentMessage { text, .. } if text == "hello"));
    let ConversationItem::Work(second) = &items[2] else {
        panic!("{items:#?}")
    };
    assert_eq!(second.counts.get(&Effect::Command), Some(&1));
    assert_eq!(second.counts.get(&Effect::WorkspaceWrite), Some(&1));
    assert_eq!(second.steps[1].status, Some(ToolStatus::Ok));
    assert_eq!(second.steps[1].output.as_deref(), Some("ok"));
    assert_eq!(second.last_at_ms - second.at_ms, 3000);
}

/// A question gets its answer from the asking call's result; a `done` verdict gets the
/// report its `report_done` call declared.
#[test]
fn answers_and_reports_join_their_items() {
    let ask = json!({"call_id": "q", "question": "Which?", "options": ["A", "B"]});
    let report = json!({"summary": "s", "evidence": "e", "files": ["out.txt"]}).to_string();
    let items = fold(&[
        row(1, "question", Some("t"), ask),
        result(2, "q", "request_user_input", "The person answered: B"),
        row(
            3,
            "tool_call",
            Some("t"),
            json!({"call_id": "r", "name": "report_done", "arguments": report}),
        ),
        result(4, "r", "report_done", "accepted"),
        row(
            5,
            "task_finished",
            Some("t"),
            json!({"verdict": "done", "message": "s"}),
        ),
    ]);
    assert_eq!(items.len(), 2, "{items:#?}");
    assert!(matches!(
        &items[0],
        ConversationItem::Question { answer: Some(a), options, .. }
            if a == "The person answered: B" && options.len() == 2
    ));
    let ConversationItem::Verdict { report, .. } = &items[1] else {
        panic!("{items:#?}")
    };
    assert_eq!(report.as_ref().unwrap().files, ["out.txt"]);
}

/// Long outputs are cut; a group keeps its newest steps and counts them all.
#[test]
fn groups_stay_bounded() {
    let long = "x".repeat(lazyboy_protocol::WORK_OUTPUT_CHARS + 10);
    let mut rows = Vec::new();
    for i in 0..60 {
        rows.push(call(2 * i, &format!("c{i}"), "read_file", "read"));
        rows.push(result(2 * i + 1, &format!("c{i}"), "read_file", &long));
    }
    let items = fold(&rows);
    let ConversationItem::Work(group) = &items[0] else {
        panic!()
    };
    assert_eq!(group.counts.get(&Effect::Read), Some(&60));
    assert_eq!(group.steps.len(), lazyboy_protocol::WORK_STEPS_KEPT);
    assert_eq!(group.omitted, 10);
    assert!(group.steps[0].output.as_ref().unwrap().contains("(cut;"));
}
