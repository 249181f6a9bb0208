//! Seeing the box: `screenshot` reaches the model as an image in both wire formats (OpenAI:
//! image content after the tool results; Anthropic: an image block in the tool result), and
//! `computer_use` subagents: pixels only (`computer`, `screenshot`, `send_message`), one at a
//! time in the daemon (the second waits in the box's queue), the parent keeping only
//! `screenshot`.

use lazyboy_protocol::{BoxLockAction, Event, EventBody};
use lazyboy_tests::boxes::{
    SITE, TestBox, objective, rounds, route, start_with_site, wait_finished,
};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, all_events, create_task};
use serde_json::json;

/// A PNG in base64 starts with these characters.
const PNG64: &str = "iVBORw0KGgo";

fn config(a: &MockModel, b: &MockModel) -> String {
    format!(
        "default_provider = \"a\"\nheartbeat_secs = 1\n\n[providers.a]\nwire = \"openai\"\n\
         base_url = \"{}\"\nmodel = \"m\"\n\n[providers.b]\nwire = \"anthropic\"\n\
         base_url = \"{}\"\nmodel = \"m\"\n\n[retry]\nmax_attempts = 2\nbase_ms = 5\n",
        a.openai_base_url(),
        b.anthropic_base_url()
    )
}

#[tokio::test]
async fn screenshots_reach_the_model_and_computer_use_subagents_take_turns() {
    let test_box = TestBox::new();
    let (openai, anthropic) = (MockModel::start().await, MockModel::start().await);
    let env = test_box.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let daemon = TestDaemon::start_with(&config(&openai, &anthropic), &env).await;
    start_with_site(&daemon, &test_box).await;
    add_agent(&daemon, "ant").await;
    let patched = daemon
        .http
        .patch(daemon.url("/api/agents/ant"))
        .json(&json!({"model": "b/m"}))
        .send()
        .await
        .unwrap();
    assert!(patched.status().is_success());

    // Anthropic: the image is a block inside the tool result.
    anthropic
        .push(Reply::tool_call("ss1", "screenshot", json!({})))
        .push(Reply::tool_call(
            "m1",
            "send_message",
            json!({"text": "seen"}),
        ))
        .push(Reply::text("seen"));
    let task = create_task(&daemon, "ant", "look at the screen", None).await;
    wait_finished(&daemon, &task).await;
    let after = &anthropic.requests()[1];
    assert_eq!(after.images.len(), 1, "{:?}", after.images);
    assert_eq!(after.images[0].call_id.as_deref(), Some("ss1"));
    assert_eq!(after.images[0].media_type, "image/png");
    assert!(after.images[0].base64.starts_with(PNG64));
    assert!(
        after
            .tool_result_for("ss1")
            .unwrap()
            .contains("screenshot of the box's desktop (1280x800)")
    );

    // OpenAI: a parent with two computer_use subagents; each clicks and looks. First the
    // browser shows a page that records each click it gets.
    let parent_objective = "drive the desktop";
    let pad_objective = "open the click pad";
    route(&openai, 40, move |request| {
        let goal = objective(request);
        let n = rounds(request);
        if goal == pad_objective {
            return match n {
                0 => Reply::tool_call(
                    "n1",
                    "browser_navigate",
                    json!({"url": format!("{SITE}/clickpad")}),
                ),
                _ => Reply::text("open"),
            };
        }
        if goal == parent_objective {
            return match n {
                0 => Reply::tool_calls([
                    (
                        "sp1",
                        "spawn_subagent",
                        json!({"objective": "click one", "kind": "computer_use"}),
                    ),
                    (
                        "sp2",
                        "spawn_subagent",
                        json!({"objective": "click two", "kind": "computer_use"}),
                    ),
                ]),
                1 => Reply::text("waiting for them"),
                2 => Reply::tool_call("ps", "screenshot", json!({})),
                3 => Reply::tool_call("pm", "send_message", json!({"text": "both done"})),
                _ => Reply::text("both done"),
            };
        }
        match n {
            0 => Reply::tool_call(
                "c1",
                "computer",
                json!({"action": "click", "x": 640, "y": 400}),
            ),
            1 => Reply::tool_call("c2", "computer", json!({"action": "key", "keys": "ctrl+l"})),
            2 => Reply::tool_call(
                "c3",
                "send_message",
                json!({"text": format!("{goal}: done")}),
            ),
            _ => Reply::text("done"),
        }
    });
    let pad = create_task(&daemon, "default", pad_objective, None).await;
    wait_finished(&daemon, &pad).await;
    let parent = create_task(&daemon, "default", parent_objective, None).await;
    let finished = wait_finished(&daemon, &parent).await;
    assert_eq!(finished.final_message.as_deref(), Some("both done"));

    let requests = openai.requests();
    let child_request = requests
        .iter()
        .find(|r| objective(r) == "click one")
        .unwrap();
    let mut child_tools = child_request.tools.clone();
    child_tools.sort();
    assert_eq!(
        child_tools,
        [
            "computer",
            "report_blocked",
            "report_done",
            "screenshot",
            "send_message",
            "update_plan"
        ]
    );
    let parent_request = requests
        .iter()
        .find(|r| objective(r) == parent_objective)
        .unwrap();
    assert!(parent_request.tools.iter().any(|t| t == "screenshot"));
    assert!(!parent_request.tools.iter().any(|t| t == "computer"));
    // The action's screenshot came with its result, as an image after the tool messages.
    let looked = requests
        .iter()
        .find(|r| objective(r) == "click one" && r.tool_result_for("c1").is_some())
        .unwrap();
    assert!(
        looked
            .tool_result_for("c1")
            .unwrap()
            .starts_with("click: done; screenshot")
    );
    // The clicks landed: the page under the pointer got one from each subagent, where the
    // tool was told to click.
    let clicks = test_box.exec("box", "cat /tmp/clicks.log 2>/dev/null || true");
    assert_eq!(
        clicks.lines().collect::<Vec<_>>(),
        ["640,400", "640,400"],
        "{clicks}"
    );
    assert_eq!(looked.images.len(), 1);
    assert_eq!(looked.images[0].call_id.as_deref(), Some("c1"));
    assert!(looked.images[0].base64.starts_with(PNG64));

    // One computer_use subagent at a time: the second queued while the first held the box.
    let events = all_events(&daemon, 0).await;
    let children: Vec<String> = events
        .iter()
        .filter_map(|e| match e.body() {
            Some(EventBody::SubagentSpawned { task, .. }) => Some(task),
            _ => None,
        })
        .collect();
    assert_eq!(children.len(), 2);
    let locks = |task: &str| -> Vec<(i64, BoxLockAction)> {
        events
            .iter()
            .filter(|e: &&Event| e.task.as_deref() == Some(task))
            .filter_map(|e| match e.body() {
                Some(EventBody::BoxLock { action, .. }) => Some((e.seq, action)),
                _ => None,
            })
            .collect()
    };
    let (first, second) = {
        let (a, b) = (locks(&children[0]), locks(&children[1]));
        if a[0].1 == BoxLockAction::Acquired {
            (a, b)
        } else {
            (b, a)
        }
    };
    assert_eq!(
        first.iter().map(|l| l.1).collect::<Vec<_>>(),
        [BoxLockAction::Acquired, BoxLockAction::Released]
    );
    assert_eq!(
        second.iter().map(|l| l.1).collect::<Vec<_>>(),
        [
            BoxLockAction::Queued,
            BoxLockAction::Acquired,
            BoxLockAction::Released
        ]
    );
    assert!(second[0].0 < first[1].0 && second[1].0 > first[1].0);
    openai.assert_clean();
    anthropic.assert_clean();
    daemon.stop();
}
