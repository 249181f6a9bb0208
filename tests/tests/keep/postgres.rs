//! On PostgreSQL (under `scripts/postgres-cluster`): `lazyboy backup` says to use `pg_dump`
//! and prints the line for the configured URL without its password; retention rewrites a
//! result through the migration's door (`lazyboy.rewrite`) and the log still replays.

use lazyboy_tests::fleet::postgres_url;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, all_events, model_config, output_of, wait_task_finished};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_backup_names_pg_dump_and_retention_stubs_through_the_door() {
    let url = postgres_url().await;
    // The cluster trusts loopback, so a password in the URL is carried and ignored: what
    // matters is that the printed line leaves it out.
    let url = url.replacen(
        "postgres://postgres@",
        "postgres://postgres:hunter2-secret@",
        1,
    );
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(
        &model_config(&mock, "openai"),
        &[("LAZYBOY_DATABASE_URL", url.as_str())],
    )
    .await;
    let mut command = daemon.cli();
    command.arg("backup");
    let out = output_of(command).await;
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    let expected = url.replacen(":hunter2-secret", "", 1);
    assert!(
        said.contains("back it up with pg_dump")
            && said.contains(&format!(
                "pg_dump --format=custom --file=lazyboy-$(date +%Y%m%d-%H%M%S).dump '{expected}'"
            )),
        "{said}"
    );
    assert!(!said.contains("hunter2"), "{said}");

    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "big",
        "exec_command",
        json!({"cmd": "seq 1 3000"}),
    ));
    mock.push(Reply::tool_call(
        "m1",
        "send_message",
        json!({"text": "counted"}),
    ));
    mock.push(Reply::text("counted"));
    let task = lazyboy_tests::create_task(&daemon, "default", "count", Some(ws.path())).await;
    wait_task_finished(&daemon, &task).await;
    let before = all_events(&daemon, 0).await;
    let mut command = daemon.cli();
    command.args(["--json", "retention", "run", "--days", "0"]);
    let out = output_of(command).await;
    assert!(out.status.success(), "{out:?}");
    let report: lazyboy_protocol::RetentionReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report.results, report.tasks), (1, 1));
    let after = all_events(&daemon, 0).await;
    assert_eq!(after.len(), before.len() + 1, "one retention_pass appended");
    for (old, new) in before.iter().zip(&after) {
        assert_eq!((old.seq, &old.kind), (new.seq, &new.kind));
        if new.kind == "tool_result" && new.data["call_id"] == "big" {
            assert!(
                new.data["output"]
                    .as_str()
                    .unwrap()
                    .starts_with("(removed after 0 days: 14 KB)")
            );
            assert_eq!(new.data["removed"]["lines"], 3003);
        } else {
            assert_eq!(old, new, "only the big result changed");
        }
    }
    assert_eq!(after.last().unwrap().kind, "retention_pass");
    daemon.stop();
}
