//! `lazyboy restore`: everything comes back as it was; a running daemon, a newer schema, a
//! corrupted or truncated archive are refused with a clear message and nothing changed.

use std::path::Path;
use std::process::Command;

use lazyboy_protocol::{ScheduleList, paths};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, all_events, output_of, temp_home, wait_task_finished};
use serde_json::json;

use super::{backup, restore, rows, snapshot};

/// Rewrites the archive's manifest with python3's tarfile (the tests hold no tar writer):
/// `edit` is a Python statement over the parsed manifest `m`.
fn rewrite_manifest(from: &Path, to: &Path, edit: &str) {
    let script = format!(
        "import io, json, sys, tarfile\n\
         src = tarfile.open(sys.argv[1], 'r:gz'); dst = tarfile.open(sys.argv[2], 'w:gz')\n\
         for member in src.getmembers():\n\
         \x20   data = src.extractfile(member).read()\n\
         \x20   if member.name == 'manifest.json':\n\
         \x20       m = json.loads(data); {edit}; data = json.dumps(m).encode()\n\
         \x20       member.size = len(data)\n\
         \x20   dst.addfile(member, io.BytesIO(data))\n\
         dst.close()\n"
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .arg(from)
        .arg(to)
        .output()
        .expect("python3 is needed (scripts/test installs it)");
    assert!(out.status.success(), "{out:?}");
}

/// Writes `from` to `to` with one byte flipped, from the middle on, at the first place
/// where the flip really damages it. Not every flip does: one in a deflate distance can
/// point the copy at other bytes that happen to be the same (a database has runs of zeros),
/// and that archive still holds exactly what was backed up (this test once flipped one).
fn flip_a_byte(from: &Path, to: &Path) {
    let script = "import gzip, sys\n\
         data = open(sys.argv[1], 'rb').read(); plain = gzip.decompress(data)\n\
         for at in range(len(data) // 2, len(data)):\n\
         \x20   damaged = bytearray(data); damaged[at] ^= 0x55\n\
         \x20   try:\n\
         \x20       same = gzip.decompress(bytes(damaged)) == plain\n\
         \x20   except Exception:\n\
         \x20       same = False\n\
         \x20   if not same:\n\
         \x20       open(sys.argv[2], 'wb').write(damaged); sys.exit(0)\n\
         sys.exit('no flip damages the archive')\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(from)
        .arg(to)
        .output()
        .expect("python3 is needed (scripts/test installs it)");
    assert!(out.status.success(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_brings_back_agents_tasks_conversations_memories_and_schedules() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "keeper").await;
    mock.push(Reply::tool_call(
        "w1",
        "memory_write",
        json!({"text": "the spare key is under the blue pot", "key": "key"}),
    ));
    mock.push(Reply::text("noted"));
    let task = lazyboy_tests::create_task(&daemon, "keeper", "remember the key", None).await;
    wait_task_finished(&daemon, &task).await;
    lazyboy_tests::post_message(&daemon.http, &daemon.url(""), "keeper", "a note to keep")
        .await
        .unwrap();
    let response = daemon
        .http
        .post(daemon.url("/api/agents/keeper/schedules"))
        .json(&json!({"cron": "0 9 * * 1", "objective": "weekly review"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    let schedules: ScheduleList = daemon.client().get("/api/schedules").await.unwrap();
    let conversation: serde_json::Value = daemon
        .client()
        .get("/api/agents/keeper/conversation")
        .await
        .unwrap();
    let events = all_events(&daemon, 0).await;
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("all.tar.gz");
    let mut command = daemon.cli();
    command
        .args(["--json", "backup", "--with-secrets"])
        .arg(&archive);
    let out = output_of(command).await;
    assert!(out.status.success(), "{out:?}");
    let token = daemon.token();
    daemon.stop();

    let home = temp_home();
    let out = restore(home.path(), &archive).await;
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("2 agents") && said.contains("1 schedules"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join(paths::TOKEN))
            .unwrap()
            .trim(),
        token.trim(),
        "--with-secrets brings the token back"
    );
    let restored = TestDaemon::start_in(home.path(), &[]).await;
    assert_eq!(rows(&all_events(&restored, 0).await)[..], rows(&events)[..]);
    let again: ScheduleList = restored.client().get("/api/schedules").await.unwrap();
    assert_eq!(again, schedules);
    let again: serde_json::Value = restored
        .client()
        .get("/api/agents/keeper/conversation")
        .await
        .unwrap();
    assert_eq!(again, conversation);
    // The memory is the agent's again: a search finds it.
    mock.push(Reply::tool_call(
        "s1",
        "memory_search",
        json!({"query": "spare key"}),
    ));
    mock.push(Reply::text("found"));
    let task = lazyboy_tests::create_task(&restored, "keeper", "where is the key", None).await;
    wait_task_finished(&restored, &task).await;
    let seen = mock
        .requests()
        .iter()
        .find_map(|r| r.tool_result_for("s1").map(str::to_owned))
        .unwrap();
    assert!(seen.contains("blue pot"), "{seen}");
    restored.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_refuses_a_running_daemon_a_newer_schema_and_a_damaged_archive() {
    let owned = temp_home();
    let daemon = TestDaemon::start_in(owned.path(), &[]).await;
    add_agent(&daemon, "kept").await;
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("good.tar.gz");
    let made = backup(&daemon, &archive).await;

    // A daemon runs on the home: refused, naming it, and the home holds the same files (the
    // running daemon may write to its database meanwhile, so names, not bytes).
    let names = |home: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(home)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = names(daemon.home());
    let out = restore(daemon.home(), &archive).await;
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        said.contains(&format!("a lazyboyd (pid {}) is running", daemon.pid()))
            && said.contains("nothing was changed"),
        "{said}"
    );
    assert_eq!(names(daemon.home()), before);
    assert!(
        lazyboy_tests::post_message(&daemon.http, &daemon.url(""), "kept", "still here")
            .await
            .is_ok()
    );
    daemon.stop();
    let home = owned.path().to_owned();

    // The rest are refused on a stopped home, which stays byte for byte as it was.
    let before = snapshot(&home);
    let newer = dir.path().join("newer.tar.gz");
    rewrite_manifest(&archive, &newer, "m['schema_version'] += 1");
    let truncated = dir.path().join("truncated.tar.gz");
    let bytes = std::fs::read(&archive).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let flipped = dir.path().join("flipped.tar.gz");
    flip_a_byte(&archive, &flipped);
    let lying = dir.path().join("lying.tar.gz");
    rewrite_manifest(&archive, &lying, "m['files'][0]['sha256'] = '0' * 64");
    let schema = made.manifest.schema_version;
    for (file, expected) in [
        (
            &newer,
            format!(
                "schema version is {}, newer than this lazyboyd knows ({schema})",
                schema + 1
            ),
        ),
        (&truncated, "corrupted or truncated".to_owned()),
        (&flipped, "corrupted or truncated".to_owned()),
        (&lying, "does not match its checksum".to_owned()),
    ] {
        let out = restore(&home, file).await;
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{file:?} was restored");
        assert!(
            said.contains(&expected) && said.contains("nothing was changed"),
            "{file:?}: {said}"
        );
        assert_eq!(snapshot(&home), before, "{file:?} changed the home");
        let staged: Vec<_> = std::fs::read_dir(&home)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".restore-"))
            .collect();
        assert!(staged.is_empty(), "{file:?} left its staging behind");
    }
    // The good archive still restores there.
    let out = restore(&home, &archive).await;
    assert!(out.status.success(), "{out:?}");
}
