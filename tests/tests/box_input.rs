//! The box's tools at work, and their answers to bad input: a `browser_click` with an unknown
//! ref, a navigation to a non-URL, a `copy_to_box` path outside the workspace and a
//! `box_read_file` of a missing file are each a clear tool error; good calls do what they say
//! (shell, files both ways, snapshot refs, click, type and submit).

use lazyboy_protocol::ToolStatus;
use lazyboy_tests::boxes::{SITE, TestBox, daemon, result_of, start_with_site};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{create_task, task_events};
use serde_json::json;

#[tokio::test]
async fn bad_input_is_a_clear_tool_error_and_good_input_works() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;
    start_with_site(&daemon, &test_box).await;
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "from the host\n").unwrap();

    let calls = [
        ("bad1", "browser_click", json!({"ref": 99})),
        ("bad2", "browser_navigate", json!({"url": "not a url"})),
        (
            "bad3",
            "copy_to_box",
            json!({"path": "../../etc/passwd", "dest": "passwd"}),
        ),
        ("bad4", "box_read_file", json!({"path": "missing.txt"})),
        (
            "sh1",
            "box_shell",
            json!({"command": "id -un; pwd; echo \"display=${DISPLAY:-none}\""}),
        ),
        (
            "cp1",
            "copy_to_box",
            json!({"path": "notes.txt", "dest": "in/notes.txt"}),
        ),
        ("rd1", "box_read_file", json!({"path": "in/notes.txt"})),
        (
            "wr1",
            "box_write_file",
            json!({"path": "/tmp/out/made.txt", "content": "made in the box\n"}),
        ),
        (
            "cp2",
            "copy_from_box",
            json!({"src": "/tmp/out/made.txt", "path": "back/made.txt"}),
        ),
        (
            "nv1",
            "browser_navigate",
            json!({"url": format!("{SITE}/form")}),
        ),
        ("sn1", "browser_snapshot", json!({})),
        (
            "ty1",
            "browser_type",
            json!({"ref": 1, "text": "hello box", "submit": true}),
        ),
        ("sn2", "browser_snapshot", json!({})),
        (
            "nv2",
            "browser_navigate",
            json!({"url": format!("{SITE}/")}),
        ),
        ("sn3", "browser_snapshot", json!({})),
        ("ck1", "browser_click", json!({"ref": 1})),
        (
            "wt1",
            "browser_wait",
            json!({"text": "this is page next", "timeout_ms": 5000}),
        ),
        (
            "wt2",
            "browser_wait",
            json!({"selector": "#never", "timeout_ms": 300}),
        ),
    ];
    for (id, name, args) in &calls {
        mock.push(Reply::tool_call(*id, *name, args.clone()));
    }
    mock.push(Reply::text("done"));
    let task = create_task(
        &daemon,
        "default",
        "exercise the box",
        Some(workspace.path()),
    )
    .await;
    lazyboy_tests::boxes::wait_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    let error = |call: &str, expect: &str| {
        let (status, text) = result_of(&events, call);
        assert_eq!(status, ToolStatus::Error, "{call}: {text}");
        assert!(text.contains(expect), "{call}: {text}");
    };
    let ok = |call: &str, expect: &str| {
        let (status, text) = result_of(&events, call);
        assert_eq!(status, ToolStatus::Ok, "{call}: {text}");
        assert!(text.contains(expect), "{call}: {text}");
        text
    };
    error("bad1", "unknown ref 99");
    error("bad2", "\"not a url\" is not a URL");
    error("bad3", "workspace");
    error("bad4", "No such file");
    let shell = ok("sh1", "exited with code 0");
    // The display is the browser user's: box's commands do not get it (box_reach.rs tries).
    assert!(
        shell.contains("box\n/home/box/work/default\ndisplay=none\n"),
        "{shell}"
    );
    ok(
        "cp1",
        "copied notes.txt (14 bytes) to /home/box/work/default/in/notes.txt in the box",
    );
    ok("rd1", "from the host");
    ok("wr1", "wrote 16 bytes");
    ok("cp2", "back/made.txt");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("back/made.txt")).unwrap(),
        "made in the box\n"
    );
    let form = ok("sn1", "[1] field \"search\"");
    assert!(form.contains("[2] button \"Go\""), "{form}");
    ok("ty1", "pressed Enter");
    ok("sn2", "results for hello box");
    let home = ok("sn3", "[1] link \"Next page\" -> /page/next");
    assert!(home.contains("[2] button \"Press\""), "{home}");
    ok("ck1", "clicked [1]");
    ok("wt1", "found text");
    error("wt2", "did not appear");
    mock.assert_clean();
    daemon.stop();
}
