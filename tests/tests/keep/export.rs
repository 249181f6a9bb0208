//! `lazyboy export` and `GET /api/tasks/{id}/export`: a task with a box screenshot, a spilled
//! 5 MB output and a question answered after a restart reads back complete, as JSON (parsed
//! back into the protocol's type) and as Markdown (each section present).

use lazyboy_protocol::{ExportEntry, TaskExport, TaskState, ToolStatus, Verdict};
use lazyboy_tests::boxes::{self, TestBox};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::tasks::wait_task_state;
use lazyboy_tests::{output_of, wait_task_finished};
use serde_json::json;

/// The spilled file's size: 5,000,000 bytes of lines.
const BIG: usize = 5_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_reads_back_complete_with_a_screenshot_a_spill_and_an_answer_after_a_restart() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let mut daemon = boxes::daemon(&mock, "openai", &test_box).await;
    let response = daemon
        .http
        .post(daemon.url("/api/box/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "p1",
        "update_plan",
        json!({"plan": [{"step": "make the big file", "status": "in_progress"},
                        {"step": "ask which colour", "status": "pending"}]}),
    ));
    mock.push(Reply::tool_call(
        "e1",
        "exec_command",
        json!({"cmd": format!("yes 'a line of the big output, 0123456789' | head -c {BIG} > big.txt; echo made > report.txt")}),
    ));
    mock.push(Reply::tool_call(
        "r1",
        "read_file",
        json!({"path": "big.txt", "limit": 200000}),
    ));
    mock.push(Reply::tool_call("s1", "screenshot", json!({})));
    mock.push(Reply::tool_call(
        "p2",
        "update_plan",
        json!({"plan": [{"step": "make the big file", "status": "completed"},
                        {"step": "ask which colour", "status": "in_progress"}],
               "explanation": "the file is made"}),
    ));
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Which colour should the report be?", "options": ["red", "blue"]}),
    ));
    let task = lazyboy_tests::create_task(
        &daemon,
        "default",
        "make a report with ```fences```",
        Some(ws.path()),
    )
    .await;
    wait_task_state(&daemon, &task, TaskState::WaitingForHuman).await;

    // The question is answered after a restart.
    let (status, _) = daemon.terminate();
    assert!(status.success());
    daemon.restart().await;
    mock.push(Reply::tool_call(
        "m1",
        "send_message",
        json!({"text": "blue it is"}),
    ));
    mock.push(Reply::tool_call(
        "p3",
        "update_plan",
        json!({"plan": [{"step": "make the big file", "status": "completed"},
                        {"step": "ask which colour", "status": "completed"}]}),
    ));
    mock.push(Reply::tool_call(
        "d1",
        "report_done",
        json!({"summary": "made it", "evidence": "cat report.txt", "files": ["report.txt"]}),
    ));
    let answered = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{task}/answer")))
        .json(&json!({"option": 2}))
        .send()
        .await
        .unwrap();
    assert!(
        answered.status().is_success(),
        "{}",
        answered.text().await.unwrap()
    );
    let done = wait_task_finished(&daemon, &task).await;
    assert_eq!(
        done.verdict,
        Some(Verdict::Done),
        "{:?}",
        done.final_message
    );

    // JSON, through the CLI, parsed back.
    let dir = tempfile::tempdir().unwrap();
    let json_file = dir.path().join("task.json");
    let mut command = daemon.cli();
    command
        .args(["export", &task, "--format", "json", "--output"])
        .arg(&json_file);
    let out = output_of(command).await;
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&json_file).unwrap();
    let export: TaskExport = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_value(&export).unwrap(),
        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        "round-trips"
    );
    assert_eq!(export.task.id, task);
    assert_eq!(export.task.objective, "make a report with ```fences```");
    assert_eq!(export.plans.len(), 3, "the plan as it evolved");
    assert_eq!(
        export.plans[1].explanation.as_deref(),
        Some("the file is made")
    );
    let call = |id: &str| {
        export
            .entries
            .iter()
            .find_map(|e| match e {
                ExportEntry::ToolCall { call_id, .. } if call_id == id => Some(e.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no call {id}"))
    };
    let ExportEntry::ToolCall {
        arguments,
        status,
        spilled,
        ..
    } = call("r1")
    else {
        unreachable!()
    };
    assert!(arguments.contains("big.txt"));
    assert_eq!(status, Some(ToolStatus::Ok));
    let spilled = spilled.expect("the spilled output is in the export");
    assert!(
        !spilled.truncated && spilled.bytes as usize > BIG,
        "{} bytes",
        spilled.bytes
    );
    assert_eq!(spilled.text.len() as u64, spilled.bytes);
    assert!(spilled.text.contains("a line of the big output"));
    let ExportEntry::ToolCall { images, .. } = call("s1") else {
        unreachable!()
    };
    assert_eq!(images.len(), 1, "the screenshot");
    assert!(images[0].bytes > 0 && images[0].sha256.as_ref().is_some_and(|s| s.len() == 64));
    let answer = export.entries.iter().find_map(|e| match e {
        ExportEntry::Question {
            question, answer, ..
        } if question.starts_with("Which colour") => Some(answer.clone()),
        _ => None,
    });
    let answer = answer.flatten().expect("the answer after the restart");
    assert!(answer.contains("blue"), "{answer}");
    assert!(export.entries.iter().any(|e| matches!(e,
        ExportEntry::Message { from, text, .. } if from == "agent" && text == "blue it is")));
    let verdict = export.verdict.as_ref().unwrap();
    assert_eq!(verdict.verdict, Verdict::Done);
    assert_eq!(export.deliverables.len(), 1);
    assert_eq!(export.deliverables[0].path, "report.txt");
    assert_eq!(export.deliverables[0].bytes, 5);
    let sum = std::process::Command::new("sha256sum")
        .arg(ws.path().join("report.txt"))
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    assert_eq!(
        export.deliverables[0].sha256.as_deref(),
        sum.split_whitespace().next()
    );
    assert!(export.usage.input_tokens > 0, "usage: {:?}", export.usage);
    assert!(export.omitted.is_empty(), "{:?}", export.omitted);

    // Markdown over HTTP: every section, the fences outlasting the objective's.
    let response = daemon
        .http
        .get(daemon.url(&format!("/api/tasks/{task}/export?format=md")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    let md = response.text().await.unwrap();
    for section in [
        "# Task ",
        "## Objective",
        "## Plan",
        "### Revision 3",
        "- [x] make the big file",
        "## Conversation",
        "### tool call `read_file` (ok)",
        "<details><summary>The whole output: <code>.lazyboy-output/",
        "### tool call `screenshot`",
        "Screenshots:",
        "### question",
        "**Answer:**",
        "## Verdict",
        "**done**",
        "## Deliverables",
        "| `report.txt` | 5 |",
        "## Usage",
    ] {
        assert!(md.contains(section), "the Markdown lacks {section:?}");
    }
    assert!(md.len() > BIG, "the spilled output is in the Markdown too");
    let bad = daemon
        .http
        .get(daemon.url(&format!("/api/tasks/{task}/export?format=pdf")))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let missing = daemon
        .http
        .get(daemon.url("/api/tasks/no-such-task/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    mock.assert_clean();
    daemon.stop();
}
