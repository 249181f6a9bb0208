//! Every process of a task is contained (issue 21, finding 3): a command's survivor that
//! detached into a session of its own and dropped the command's marker from its environment
//! (`setsid -f env -u LAZYBOYD_COMMAND_ID ...`) is dead
//! - when its task ends (a verdict), from a confined agent and an unconfined one alike;
//! - when the person runs `lazyboy daemon stop` (its task still waiting for them);
//! - after `kill -9` of the daemon (which leaves it running, as before) and a restart, which
//!   stops it and reports the command lost, "still running".
//!
//! Without cgroups (`LAZYBOY_CGROUPS=off`), `doctor` says what is not contained and the
//! daemon's stop still ends the survivor (it is the daemon's adopted orphan).
//!
//! A command is born inside its cgroup (`clone3(CLONE_INTO_CGROUP)`, not a migration): its
//! shell is in the command's cgroup, its parent is the sandbox helper, outside, and the
//! command's end (an exit code, a signal) reaches the task unchanged.
//!
//! Each survivor is seen alive first, so its death is the daemon's doing. Needs cgroup v2
//! where the daemon may make cgroups (root here and in CI).

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{CheckStatus, DoctorReport, EventBody, TaskState};
use lazyboy_tests::attacks::{
    add, alive_with, read_pid, require, result_of, run_command, wait_dead,
};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::tasks::wait_task_state;
use lazyboy_tests::{TestDaemon, create_task, output_of, task_events, wait_for};
use serde_json::json;

/// A command that leaves a survivor (`sleep <mark>`) and returns at once: a new session, no
/// marker, none of the command's pipes (so nothing ties it to the command any more); its pid
/// lands in `survivor.pid`.
fn detach(mark: &str) -> String {
    format!(
        "setsid -f env -u LAZYBOYD_COMMAND_ID sh -c 'echo $$ > survivor.pid; exec sleep {mark}' \
         < /dev/null > /dev/null 2>&1; \
         for i in $(seq 100); do [ -s survivor.pid ] && break; sleep 0.05; done; \
         cat survivor.pid"
    )
}

fn have_cgroups() {
    let v2 = std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|m| m.lines().any(|l| l.contains(" - cgroup2 ")));
    require(
        "a cgroup v2 hierarchy the daemon may write (root)",
        v2 && lazyboy_tests::attacks::is_root(),
    );
}

/// Starts a task of `agent` in `ws` that runs `detach(mark)` and then waits for the person
/// (`request_user_input`); returns the task and the survivor's pid once it is alive.
async fn leave_survivor(
    daemon: &TestDaemon,
    mock: &MockModel,
    agent: &str,
    ws: &Path,
    mark: &str,
) -> (String, i32) {
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({"cmd": detach(mark)}),
    ));
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "go on?", "options": ["yes"]}),
    ));
    let id = create_task(daemon, agent, "leave something behind", Some(ws)).await;
    wait_task_state(daemon, &id, TaskState::WaitingForHuman).await;
    let pid = read_pid(&ws.join("survivor.pid")).await;
    assert!(
        alive_with(pid, mark),
        "the survivor runs while its task does"
    );
    (id, pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_survivor_dies_when_its_task_ends_confined_or_not() {
    have_cgroups();
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "boxed"})).await;
    add(&daemon, json!({"name": "trusted", "sandbox": "off"})).await;
    for (agent, mark) in [("boxed", "3141.5"), ("trusted", "3141.6")] {
        let ws = tempfile::tempdir().unwrap();
        let (id, pid) = leave_survivor(&daemon, &mock, agent, ws.path(), mark).await;
        // The answer lets the task end with a verdict.
        mock.push(Reply::text("done"));
        let mut answer = daemon.cli();
        answer.args(["answer", &id, "yes"]);
        assert!(output_of(answer).await.status.success());
        wait_task_state(&daemon, &id, TaskState::Done).await;
        wait_dead(pid, mark, &format!("after {agent}'s task ended")).await;
    }
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_survivor_dies_with_lazyboy_daemon_stop() {
    have_cgroups();
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "boxed"})).await;
    let ws = tempfile::tempdir().unwrap();
    let (_, pid) = leave_survivor(&daemon, &mock, "boxed", ws.path(), "3142.5").await;
    let mut stop = daemon.cli();
    stop.args(["daemon", "stop"]);
    let out = output_of(stop).await;
    assert!(out.status.success(), "{out:?}");
    wait_dead(pid, "3142.5", "after `lazyboy daemon stop`").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_survivor_of_kill_9_is_stopped_at_the_restart_and_reported_lost() {
    have_cgroups();
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "boxed"})).await;
    let ws = tempfile::tempdir().unwrap();
    // A background command (it outlives its call) that leaves a survivor; the turn then
    // waits for it.
    let script = format!("{}; exec sleep 3143.6", detach("3143.5"));
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({"cmd": script, "block_until_ms": 300}),
    ));
    mock.push(Reply::text("waiting for it"));
    let id = create_task(&daemon, "boxed", "start it", Some(ws.path())).await;
    let pid = read_pid(&ws.path().join("survivor.pid")).await;
    wait_for(
        Duration::from_secs(20),
        "the command to be recorded",
        || {
            let daemon = &daemon;
            let id = id.clone();
            async move {
                task_events(daemon, &id)
                    .await
                    .iter()
                    .any(|e| matches!(e, EventBody::CommandStarted { .. }))
                    .then_some(())
            }
        },
    )
    .await;
    daemon.kill9();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive_with(pid, "3143.5"),
        "a daemon killed -9 leaves its commands running"
    );
    mock.push(Reply::text("done"));
    daemon.restart().await;
    wait_dead(pid, "3143.5", "after the restart").await;
    wait_task_state(&daemon, &id, TaskState::Done).await;
    let ended = task_events(&daemon, &id)
        .await
        .into_iter()
        .find_map(|e| match e {
            EventBody::CommandEnded { status, .. } => Some(status),
            _ => None,
        })
        .unwrap();
    assert!(
        ended.contains("lost in a daemon restart: it was still running and has been stopped"),
        "{ended}"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cgroups_doctor_says_so_and_the_daemons_stop_still_ends_a_survivor() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[("LAZYBOY_CGROUPS", "off")]).await;
    let mut doctor = daemon.cli();
    doctor.args(["--json", "doctor"]);
    let out = output_of(doctor).await;
    let report: DoctorReport =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let cgroups = report.checks.iter().find(|c| c.name == "cgroups").unwrap();
    assert_eq!(cgroups.status, CheckStatus::Warn, "{cgroups:?}");
    assert!(cgroups.detail.contains("outlives its task"), "{cgroups:?}");
    assert!(
        cgroups
            .fix
            .as_deref()
            .unwrap_or("")
            .contains("Delegate=yes")
    );

    add(&daemon, json!({"name": "boxed"})).await;
    let ws = tempfile::tempdir().unwrap();
    let (id, pid) = leave_survivor(&daemon, &mock, "boxed", ws.path(), "3144.5").await;
    let (_, out) = result_of(&task_events(&daemon, &id).await, "c");
    assert!(out.contains(&pid.to_string()), "{out}");
    daemon.stop();
    wait_dead(pid, "3144.5", "after the daemon stopped (no cgroups)").await;
}

/// The command's shell (`$$`) and its parent (`$PPID`, the helper that waits for it): the
/// cgroup of each and the parent's name.
const WHERE: &str = "echo \"self=$(grep ^0:: /proc/$$/cgroup)\"; \
                     echo \"parent=$(grep ^0:: /proc/$PPID/cgroup)\"; \
                     echo \"parent_name=$(cat /proc/$PPID/comm)\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_is_born_in_its_cgroup_and_ends_as_it_ended() {
    have_cgroups();
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "boxed"})).await;
    add(&daemon, json!({"name": "trusted", "sandbox": "off"})).await;
    for agent in ["boxed", "trusted"] {
        let ws = tempfile::tempdir().unwrap();
        let out = run_command(
            &daemon,
            &mock,
            agent,
            ws.path(),
            &format!("{WHERE}; exit 7"),
        )
        .await;
        let field = |name: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {out}"))
                .to_owned()
        };
        // `<base>/<task>/<command>`: the command's own cgroup, made by the daemon.
        let own = field("self");
        for part in ["/lazyboy-", "/t-", "/cmd-"] {
            assert!(own.contains(part), "{agent}: {out}");
        }
        // Its parent is the helper, which stayed outside: the shell was not moved in, it
        // was created there (with a migration the shell would be the helper itself, its
        // parent the daemon).
        assert_eq!(field("parent_name"), "lazyboy-sandbox", "{agent}: {out}");
        assert_ne!(field("parent"), own, "{agent}: {out}");
        assert!(out.contains("exited with code 7"), "{agent}: {out}");

        let killed = run_command(&daemon, &mock, agent, ws.path(), "kill -TERM $$").await;
        assert!(killed.contains("killed by SIGTERM"), "{agent}: {killed}");
    }
    daemon.stop();
}
