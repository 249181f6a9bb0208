//! The dashboard shows exactly what an approval will run (issue 21, finding 14), in a real
//! headless Chromium: a command whose second line hides behind an ANSI escape, a carriage
//! return, bidi and zero-width characters shows each line on its own, numbered, every trick
//! as a visible escape, in the overview of open questions (`/api/state`) and in the
//! conversation's card; approved, what was shown runs. A 100-line command shows 20 lines and
//! a button that says how much is hidden and shows it all. And `web/lib/visible.js` makes
//! the same characters visible as the CLI's `visible.rs`, code point by code point.

use std::time::Duration;

use lazyboy_protocol::{DashboardState, Verdict};
use lazyboy_tests::browser::{Browser, SIZES, screenshot_dir};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, create_task, wait_for, wait_task_finished};
use serde_json::{Value, json};

const HIDDEN: &str = "echo checking the build \u{1b}[8m# all fine\u{200b}\u{202e}txt.tnemucod\u{202c}\
                      \r# ok\ntouch second-line-ran";
const SHOWN: [&str; 2] = [
    "echo checking the build \\x1b[8m# all fine\\u{200b}\\u{202e}txt.tnemucod\\u{202c}\\r# ok",
    "touch second-line-ran",
];

/// The lines of the newest command block under `scope`, once there is one, with their
/// numbers and escapes: `{lines, numbers, escapes, raw}` (`raw`: the block's text has a
/// character that should have been escaped).
fn block_script(scope: &str) -> String {
    format!(
        "const pre = [...document.querySelectorAll(\"{scope} lb-question pre[data-field=command]\")].pop();
         if (!pre) return null;
         const rows = [...pre.querySelectorAll('.line')];
         return {{ lines: rows.map((r) => r.textContent.replace(/…$/, '')),
                  numbers: rows.map((r) => r.dataset.n),
                  escapes: pre.querySelectorAll('.ctl').length,
                  raw: /[\\u0000-\\u001f\\u007f-\\u009f\\u200b-\\u200f\\u202a-\\u202e\\u2066-\\u2069]/
                    .test(pre.textContent),
                  button: pre.parentElement.querySelector('button.show-all')?.textContent ?? null }};"
    )
}

async fn waiting(daemon: &TestDaemon, lines: usize) {
    wait_for(Duration::from_secs(30), "the open approval", || {
        let client = daemon.client();
        async move {
            let state: DashboardState = client.get("/api/state").await.ok()?;
            state
                .questions
                .iter()
                .filter_map(|q| q.approval.as_ref()?.command.as_ref())
                .any(|c| c.lines().count() == lines)
                .then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_card_shows_every_line_and_every_hidden_character() {
    let browser = Browser::start().await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let created = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "careful", "approve": ["command"],
                      "workspace": ws.path().display().to_string()}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let long: String = (1..=100)
        .map(|i| format!("echo {i} >> out.txt\n"))
        .collect();
    mock.push(Reply::tool_call(
        "a",
        "exec_command",
        json!({"cmd": HIDDEN}),
    ));
    mock.push(Reply::tool_call("b", "exec_command", json!({"cmd": long})));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "one ran"}),
    ));
    mock.push(Reply::text("one ran"));

    browser.set_viewport(SIZES[1]).await;
    browser.goto(&daemon.login_url().await).await;
    let task = create_task(&daemon, "careful", "check the build", None).await;
    waiting(&daemon, 2).await;
    // The overview of open questions (from /api/state), then the conversation's card.
    for scope in ["#questions", "[role=log]"] {
        if scope == "[role=log]" {
            browser
                .click("//nav[@aria-label='Agents']//button[@data-name='careful']")
                .await;
        }
        let block = browser
            .wait_js("the command block", &block_script(scope))
            .await;
        assert_eq!(block["lines"], json!(SHOWN), "{scope}: {block}");
        assert_eq!(block["numbers"], json!(["1", "2"]), "{scope}");
        assert_eq!(block["escapes"], 5, "{scope}: {block}");
        assert_eq!(block["raw"], false, "{scope}: {block}");
        assert_eq!(block["button"], Value::Null, "{scope}");
    }
    let label = browser
        .eval(
            "return document.querySelector('[role=log] lb-question .question-text').textContent",
            vec![],
        )
        .await;
    assert_eq!(label, "Approve exec_command (command)?");
    browser
        .eval(
            "document.querySelector('[role=log] lb-question').scrollIntoView()",
            vec![],
        )
        .await;
    browser
        .screenshot(&screenshot_dir().join("approval-card-desktop.png"))
        .await;
    assert!(!ws.path().join("second-line-ran").exists());
    browser
        .click("//*[@role='log']//*[@role='group'][.//pre]//button[normalize-space()='Approve']")
        .await;

    // The second call: 20 of its 100 lines, and a button that says what it hides.
    waiting(&daemon, 100).await;
    assert!(
        ws.path().join("second-line-ran").exists(),
        "what was shown ran"
    );
    let hidden: usize = (21..=100)
        .map(|i| format!("echo {i} >> out.txt").len())
        .sum();
    let button = format!("Show all 100 lines ({hidden} characters, 80 more lines hidden)");
    let script = block_script("[role=log]");
    let block = browser
        .wait_js(
            "the long command's block",
            &format!(
                "const b = (() => {{ {script} }})(); return b?.lines.length === 20 ? b : null"
            ),
        )
        .await;
    assert_eq!(block["button"], json!(button), "{block}");
    assert_eq!(block["lines"][19], "echo 20 >> out.txt");
    browser
        .click(&format!(
            "//*[@role='log']//button[normalize-space()='{button}']"
        ))
        .await;
    let block = browser
        .wait_js(
            "every line",
            &format!(
                "const b = (() => {{ {script} }})(); return b?.lines.length === 100 ? b : null"
            ),
        )
        .await;
    assert_eq!(block["lines"][99], "echo 100 >> out.txt");
    assert_eq!(block["numbers"][99], "100");
    assert_eq!(block["button"], Value::Null);
    browser
        .click("//*[@role='log']//*[@role='group'][.//pre]//button[normalize-space()='Deny']")
        .await;
    let finished = wait_task_finished(&daemon, &task).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer));
    assert!(
        !ws.path().join("out.txt").exists(),
        "the denied command never ran"
    );
    mock.assert_clean();
    daemon.stop();
    browser.close().await;
}

/// Every code point of the blocks where the rule has something to say (controls, spaces,
/// bidi, zero-width, fillers, tags, variation selectors), and a few lines mixing them.
fn samples() -> Vec<String> {
    let ranges = [
        0x0..0x400,
        0x600..0x900,
        0x1100..0x1200,
        0x1680..0x1900,
        0x2000..0x2100,
        0x3000..0x3200,
        0xfe00..0x10000,
        0x110b0..0x110d0,
        0x13420..0x13450,
        0x1bc90..0x1bcb0,
        0x1d170..0x1d180,
        0x1f600..0x1f610,
        0xe0000..0xe0200,
    ];
    let mut out: Vec<String> = ranges
        .into_iter()
        .flatten()
        .filter_map(char::from_u32)
        .map(|c| format!("a{c}b"))
        .collect();
    out.extend(
        [
            "ls  ",
            " a b ",
            "\t\t",
            "x\u{1b}[31m\u{202e}y  ",
            "café → 東京 👨\u{200d}👩",
            "printf '\\x1b' \u{1b}",
            "",
        ]
        .map(String::from),
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_the_cli_make_the_same_characters_visible() {
    let browser = Browser::start().await;
    let daemon = TestDaemon::start().await;
    browser.goto(&daemon.login_url().await).await;
    let samples = samples();
    let page = browser
        .eval(
            "const input = arguments[0];
             return import('/assets/lib/visible.js').then((m) => input.map((s) => m.visibleLine(s)));",
            vec![json!(samples)],
        )
        .await;
    let page: Vec<String> = serde_json::from_value(page).unwrap();
    assert_eq!(page.len(), samples.len());
    for (sample, shown) in samples.iter().zip(&page) {
        assert_eq!(
            shown,
            &lazyboy::visible::line(sample),
            "{:?}",
            sample.chars().map(u32::from).collect::<Vec<_>>()
        );
    }
    let texts = ["a\nb\n", "a\n\nb", "", "\n", "x\r\ny"];
    let page = browser
        .eval(
            "const input = arguments[0];
             return import('/assets/lib/visible.js').then((m) => input.map((s) => m.lines(s)));",
            vec![json!(texts)],
        )
        .await;
    for (text, lines) in texts.iter().zip(page.as_array().unwrap()) {
        assert_eq!(lines, &json!(lazyboy::visible::lines(text)), "{text:?}");
    }
    daemon.stop();
    browser.close().await;
}
