//! Issue 21, finding 6: a confined agent's background command swaps a directory of its
//! workspace (`swap/`) and a symlink to a directory outside it (`alt -> <outside>`) with
//! `renameat2(RENAME_EXCHANGE)` in a tight loop (Python, ctypes), while the same agent's
//! scripted model races each file tool against it, 200 calls per tool: read_file,
//! write_file, edit_file, list_dir, search, and the person's download of a deliverable
//! through the files API. Every call either worked inside the workspace or was refused; the
//! suite counts escapes (the outside file's text in a result, a file written or edited
//! outside) and asserts none, and that both sides of the race were seen (so the loop really
//! ran while the calls did). Against the old "canonicalize, check, then open", reads,
//! listings, searches and writes escaped (7/60, 16/60, 6/60, 2/12 in the issue).
//!
//! Needs `python3` (scripts/test installs it).

use std::path::PathBuf;
use std::time::Duration;

use lazyboy_protocol::{EventBody, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, task_events, wait_for, wait_task_finished,
};
use serde_json::json;

/// Calls per reply, and replies: 200 races per tool.
const PER_REPLY: usize = 50;
const REPLIES: usize = 4;
const RACES: usize = PER_REPLY * REPLIES;

/// The swap loop: exchanges `swap` and `alt` until `stop` exists (or 5 minutes pass), then
/// prints how many swaps it made.
const SWAPPER: &str = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
def exchange():
    if hasattr(libc, "renameat2"):
        return libc.renameat2(AT_FDCWD, b"swap", AT_FDCWD, b"alt", RENAME_EXCHANGE)
    return libc.syscall(316, AT_FDCWD, b"swap", AT_FDCWD, b"alt", RENAME_EXCHANGE)
swaps, deadline = 0, time.time() + 300
print("swapping", flush=True)
while not os.path.exists("stop") and time.time() < deadline:
    for _ in range(200):
        if exchange() != 0:
            sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
        swaps += 1
print("swaps", swaps, flush=True)
"#;

/// A workspace with `swap/` (real) and `alt -> outside/` (a directory outside it), each
/// holding files of the same names with telling contents.
struct Arena {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Arena {
    fn new() -> Arena {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let swap = ws.path().join("swap");
        std::fs::create_dir(&swap).unwrap();
        for (dir, who) in [(swap.as_path(), "inside"), (outside.path(), "OUTSIDE")] {
            std::fs::write(dir.join("f.txt"), format!("{who} marker\n")).unwrap();
            for i in 0..RACES {
                std::fs::write(dir.join(format!("e-{i}.txt")), format!("edit-me {i}\n")).unwrap();
            }
        }
        std::fs::write(outside.path().join("only-outside.txt"), "x\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("alt")).unwrap();
        std::fs::write(ws.path().join("swap.py"), SWAPPER).unwrap();
        Arena { ws, outside }
    }

    /// Whichever of `swap` and `alt` is the real directory now.
    fn inside(&self) -> PathBuf {
        let swap = self.ws.path().join("swap");
        if std::fs::symlink_metadata(&swap).unwrap().is_dir() {
            swap
        } else {
            self.ws.path().join("alt")
        }
    }

    /// Files of the outside directory whose name starts with `prefix`.
    fn outside_files(&self, prefix: &str) -> Vec<String> {
        std::fs::read_dir(self.outside.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect()
    }
}

/// The script: start the swapper, race `call(i)` 200 times, stop the swapper, wait for it.
/// Refused writes are failed calls, and the loop fuses stop a task after 14 in a row: a
/// write that works (`b<i>`, outside the race) after every tenth race keeps it going.
fn script(mock: &MockModel, call: impl Fn(usize) -> MockCall) {
    mock.push(Reply::tool_call(
        "start",
        "exec_command",
        json!({"cmd": "python3 swap.py", "block_until_ms": 300}),
    ));
    for reply in 0..REPLIES {
        let mut calls = Vec::new();
        for i in reply * PER_REPLY..(reply + 1) * PER_REPLY {
            calls.push(call(i));
            if i % 10 == 9 {
                calls.push(MockCall::new(
                    format!("b{i}"),
                    "write_file",
                    json!({"path": format!("calm/b-{i}.txt"), "content": "calm"}),
                ));
            }
        }
        mock.push(Reply::tool_calls(calls));
    }
    mock.push(Reply::tool_call(
        "stop",
        "write_file",
        json!({"path": "stop", "content": "stop"}),
    ));
    await_swapper_then_tell(mock, 30_000, "raced");
}

/// Each race call's result (status, text), in order, and the swapper's report.
async fn race(
    daemon: &TestDaemon,
    arena: &Arena,
    tool: &str,
) -> (Vec<(ToolStatus, String)>, String) {
    let id = create_task(
        daemon,
        "racer",
        &format!("race {tool}"),
        Some(arena.ws.path()),
    )
    .await;
    let task = wait_task_finished(daemon, &id).await;
    assert_eq!(task.verdict, Some(Verdict::Answer), "{task:?}");
    let events = task_events(daemon, &id).await;
    let result = |call: &str| {
        events.iter().find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == call => Some((*status, output.clone())),
            _ => None,
        })
    };
    let races: Vec<_> = (0..RACES)
        .map(|i| result(&format!("r{i}")).unwrap_or_else(|| panic!("no result for r{i}")))
        .collect();
    let (_, swapper) = result("wait").expect("the swapper's end");
    assert!(swapper.contains("exited with code 0"), "{swapper}");
    (races, swapper)
}

fn swaps(report: &str) -> u64 {
    let at = report.find("swaps ").expect("the swap count") + 6;
    report[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Counts the calls that worked inside (`inside`), were refused (an error naming the
/// workspace, or a miss during a swap) and escaped (`escaped`); asserts no escape and a live
/// race, and prints the figures.
fn judge(
    tool: &str,
    races: &[(ToolStatus, String)],
    report: &str,
    inside: impl Fn(&str) -> bool,
    escaped: impl Fn(usize, &str) -> bool,
) {
    let mut counts = (0, 0, 0);
    for (i, (status, text)) in races.iter().enumerate() {
        if escaped(i, text) {
            counts.2 += 1;
        } else if *status == ToolStatus::Ok && inside(text) {
            counts.0 += 1;
        } else {
            assert_eq!(*status, ToolStatus::Error, "{tool} r{i}: {text}");
            counts.1 += 1;
        }
    }
    let (ok, refused, escapes) = counts;
    println!(
        "{tool}: {} races against {} swaps: {ok} inside, {refused} refused, {escapes} escapes",
        races.len(),
        swaps(report)
    );
    assert_eq!(escapes, 0, "{tool} escaped the workspace");
    assert!(
        ok > 0 && refused > 0,
        "{tool}: the race was not live ({ok} inside, {refused} refused)"
    );
}

async fn daemon(mock: &MockModel) -> TestDaemon {
    let daemon = TestDaemon::start_with_model(mock, "openai", &[]).await;
    // Named agents are confined (workspace-write): the swapper runs in the sandbox.
    add_agent(&daemon, "racer").await;
    daemon
}

fn need_python() {
    assert!(
        std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "python3 is missing: install it (scripts/test does)"
    );
}

/// One tool raced against the swap: `args(i)` for race `i`, what a result that worked
/// inside looks like, and what an escape looks like (given the arena after the race).
async fn race_tool(
    tool: &'static str,
    args: impl Fn(usize) -> serde_json::Value,
    inside: impl Fn(&str) -> bool,
    escaped: impl Fn(&Arena, usize, &str) -> bool,
) -> (Arena, Vec<(ToolStatus, String)>) {
    need_python();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock).await;
    let arena = Arena::new();
    script(&mock, |i| MockCall::new(format!("r{i}"), tool, args(i)));
    let (races, report) = race(&daemon, &arena, tool).await;
    judge(tool, &races, &report, inside, |i, text| {
        escaped(&arena, i, text)
    });
    mock.assert_clean();
    daemon.stop();
    (arena, races)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_never_escapes_a_swapping_directory() {
    race_tool(
        "read_file",
        |_| json!({"path": "swap/f.txt"}),
        |t| t.contains("inside marker"),
        |_, _, t| t.contains("OUTSIDE"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_dir_never_escapes_a_swapping_directory() {
    race_tool(
        "list_dir",
        |_| json!({"path": "swap"}),
        |t| t.contains("f.txt"),
        |_, _, t| t.contains("only-outside"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_never_escapes_a_swapping_directory() {
    race_tool(
        "search",
        |_| json!({"pattern": "marker", "path": "swap"}),
        |t| t.contains("inside marker"),
        |_, _, t| t.contains("OUTSIDE"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_never_lands_outside_a_swapping_directory() {
    let (arena, races) = race_tool(
        "write_file",
        |i| json!({"path": format!("swap/w-{i}.txt"), "content": "planted"}),
        |t| t.starts_with("created"),
        |arena, i, _| arena.outside.path().join(format!("w-{i}.txt")).exists(),
    )
    .await;
    assert!(arena.outside_files("w-").is_empty());
    let inside = arena.inside();
    let written = races.iter().filter(|(s, _)| *s == ToolStatus::Ok).count();
    let landed = (0..RACES)
        .filter(|i| inside.join(format!("w-{i}.txt")).exists())
        .count();
    assert_eq!(landed, written, "every write that worked is inside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_file_never_lands_outside_a_swapping_directory() {
    race_tool(
        "edit_file",
        |i| json!({"path": format!("swap/e-{i}.txt"), "old": "edit-me", "new": "edited"}),
        |t| t.starts_with("edited"),
        |arena, i, _| {
            let file = arena.outside.path().join(format!("e-{i}.txt"));
            std::fs::read_to_string(file).unwrap() != format!("edit-me {i}\n")
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_files_api_never_serves_through_a_swapping_directory() {
    need_python();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock).await;
    let arena = Arena::new();
    // The deliverable is listed while `swap/` is still the real directory.
    mock.push(Reply::tool_call(
        "done",
        "report_done",
        json!({"summary": "made f.txt", "evidence": "cat swap/f.txt", "files": ["swap/f.txt"]}),
    ));
    let maker = create_task(&daemon, "racer", "make f.txt", Some(arena.ws.path())).await;
    assert_eq!(
        wait_task_finished(&daemon, &maker).await.verdict,
        Some(Verdict::Done)
    );

    // A later task of the agent swaps while the person downloads the deliverable.
    mock.push(Reply::tool_call(
        "start",
        "exec_command",
        json!({"cmd": "python3 swap.py", "block_until_ms": 300}),
    ));
    await_swapper_then_tell(&mock, 120_000, "swapped");
    let swapper = create_task(&daemon, "racer", "swap", Some(arena.ws.path())).await;
    wait_for(Duration::from_secs(30), "the swapper to run", || {
        let daemon = &daemon;
        let swapper = swapper.clone();
        async move {
            let events = task_events(daemon, &swapper).await;
            events
                .iter()
                .any(|e| matches!(e, EventBody::ToolResult { call_id, .. } if call_id == "start"))
                .then_some(())
        }
    })
    .await;
    let url = daemon.url(&format!("/api/tasks/{maker}/files/swap/f.txt"));
    let mut races = Vec::new();
    for _ in 0..RACES {
        let response = daemon.http.get(&url).send().await.unwrap();
        let status = if response.status() == 200 {
            ToolStatus::Ok
        } else {
            assert_eq!(response.status(), 404);
            ToolStatus::Error
        };
        races.push((status, response.text().await.unwrap()));
    }
    std::fs::write(arena.ws.path().join("stop"), "stop").unwrap();
    assert_eq!(
        wait_task_finished(&daemon, &swapper).await.verdict,
        Some(Verdict::Answer)
    );
    let events = task_events(&daemon, &swapper).await;
    let report = events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id, output, ..
            } if call_id == "wait" => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    judge(
        "files API",
        &races,
        &report,
        |t| t.contains("inside marker"),
        |_, t| t.contains("OUTSIDE"),
    );
    mock.assert_clean();
    daemon.stop();
}

/// The script's end: wait for the swapper (the command started as call `start`), then tell
/// the person `text`, so no reminder round takes the next script's first reply.
fn await_swapper_then_tell(mock: &MockModel, timeout_ms: u64, text: &'static str) {
    mock.push_fn(move |request| {
        let started = request.tool_result_for("start").unwrap_or_default();
        let at = started.find("cmd-").expect("the swapper's id");
        let id = &started[at..at + 16];
        Reply::tool_call(
            "wait",
            "await_command",
            json!({"id": id, "timeout_ms": timeout_ms}),
        )
    });
    mock.push(Reply::tool_call("m", "send_message", json!({"text": text})));
    mock.push(Reply::text(text));
}
