//! The git files of an existing repository in a `workspace-write` agent's workspace (issue
//! 21, finding 13): a planted `pre-commit` hook and a `core.fsmonitor` setting would run as
//! the person at their next `git status` / `git commit`. Attacked from the agent's command
//! (every way in: the hook written, `git config`, `.git/config` appended to, `.git` renamed,
//! removed or redirected with `commondir`) and from its `write_file` tool; the person's git
//! then runs nothing of the agent's. With the per-agent opt-in (`--git-write true`) the same
//! writes land, and the person's commit does run the hook: the control that shows the
//! markers would have caught it. As an unprivileged user, the helper protects them through a
//! user namespace.

use std::path::Path;
use std::process::Command;

use lazyboy_tests::attacks::{add, is_root, require, result_of, run_command};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, bin, create_task, output_of, task_events, wait_task_finished};
use serde_json::json;

/// `git ARGS` in `dir` as the person, with nothing from the environment steering it.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Person")
        .env("GIT_AUTHOR_EMAIL", "person@example.com")
        .env("GIT_COMMITTER_NAME", "Person")
        .env("GIT_COMMITTER_EMAIL", "person@example.com")
        .output()
        .unwrap()
}

/// A repository with one commit of `tracked.txt`.
fn repository(dir: &Path) {
    assert!(
        git(dir, &["init", "-q", "."]).status.success(),
        "git is needed"
    );
    std::fs::write(dir.join("tracked.txt"), "one\n").unwrap();
    assert!(git(dir, &["add", "tracked.txt"]).status.success());
    assert!(git(dir, &["commit", "-q", "-m", "first"]).status.success());
}

/// Every way the agent's command tries to plant programs for the person's git; `marks`
/// is where they would leave their traces.
fn planting(marks: &Path) -> String {
    let m = marks.display();
    format!(
        "printf '#!/bin/sh\\ntouch {m}/hook-ran\\n' > .git/hooks/pre-commit; echo \" hook=$?\"; \
         chmod +x .git/hooks/pre-commit; \
         git config core.fsmonitor 'touch {m}/fsmonitor-ran; false'; echo \" config=$?\"; \
         printf '[core]\\n\\tfsmonitor = touch {m}/fsmonitor-ran\\n' >> .git/config; \
         echo \" append=$?\"; \
         mv .git .git-old; echo \" rename=$?\"; \
         rm -rf .git 2>/dev/null; echo \" remove=$?\"; \
         echo {m} > .git/commondir; echo \" commondir=$?\"; \
         git -c user.name=a -c user.email=a@b commit -q --allow-empty -m agent; \
         echo \" commit=$?\"; \
         echo two > tracked.txt; echo \" worktree=$?\""
    )
}

/// The person's `git status` and `git commit` after the agent's turn; whether each ran.
fn persons_git(ws: &Path) -> (bool, bool) {
    let status = git(ws, &["status", "--short"]);
    let commit = git(ws, &["commit", "-q", "-am", "person"]);
    (status.status.success(), commit.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_hook_and_fsmonitor_never_run_at_the_persons_git() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "boxed"})).await;
    let ws = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    repository(ws.path());

    let out = run_command(&daemon, &mock, "boxed", ws.path(), &planting(marks.path())).await;
    for failed in [
        "hook",
        "config",
        "append",
        "rename",
        "remove",
        "commondir",
        "commit",
    ] {
        assert!(!out.contains(&format!(" {failed}=0")), "{failed}: {out}");
    }
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(
        out.contains(" worktree=0"),
        "the work tree stays writable: {out}"
    );
    assert!(ws.path().join(".git/HEAD").is_file(), ".git is still there");

    // The daemon writes for the file tools: they are held to the same rule.
    mock.push(Reply::tool_call(
        "w",
        "write_file",
        json!({"path": ".git/hooks/post-commit", "content": "#!/bin/sh\necho pwned\n"}),
    ));
    // Also through a link of the work tree into it: the write is judged where it lands (the
    // opened directory), not by the path given.
    mock.push(Reply::tool_call(
        "ln",
        "exec_command",
        json!({"cmd": "ln -s .git/hooks hk && ln -s .git lg"}),
    ));
    mock.push(Reply::tool_call(
        "w2",
        "write_file",
        json!({"path": "hk/post-commit", "content": "#!/bin/sh\necho pwned\n"}),
    ));
    mock.push(Reply::tool_call(
        "w3",
        "edit_file",
        json!({"path": "lg/config", "old": "[core]", "new": "[core]\n\tfsmonitor = touch /tmp/x"}),
    ));
    mock.push(Reply::text("done"));
    let id = create_task(&daemon, "boxed", "write a hook", Some(ws.path())).await;
    wait_task_finished(&daemon, &id).await;
    let events = task_events(&daemon, &id).await;
    for call in ["w", "w2", "w3"] {
        let (_, written) = result_of(&events, call);
        assert!(written.contains("may not change"), "{call}: {written}");
    }
    assert!(!ws.path().join(".git/hooks/post-commit").exists());

    let (status, commit) = persons_git(ws.path());
    assert!(status && commit, "the person's git works");
    assert!(
        !marks.path().join("fsmonitor-ran").exists(),
        "fsmonitor ran"
    );
    assert!(!marks.path().join("hook-ran").exists(), "the hook ran");
    let config = std::fs::read_to_string(ws.path().join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!ws.path().join(".git/hooks/pre-commit").exists());
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_git_write_the_agents_git_writes_land() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let mut team = daemon.cli();
    team.args(["team", "add", "committer", "--git-write", "true"]);
    let added = output_of(team).await;
    assert!(added.status.success(), "{added:?}");
    assert!(String::from_utf8_lossy(&added.stdout).contains("git dirs:     writable"));
    let agent: lazyboy_protocol::Agent =
        daemon.client().get("/api/agents/committer").await.unwrap();
    assert!(agent.git_write);
    let ws = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    repository(ws.path());
    // Only the hook: with fsmonitor set the person's git would run it at every command.
    let script = format!(
        "printf '#!/bin/sh\\ntouch {}/hook-ran\\n' > .git/hooks/pre-commit; echo \" hook=$?\"; \
         chmod +x .git/hooks/pre-commit; \
         git -c user.name=a -c user.email=a@b commit -q --allow-empty -m agent; \
         echo \" commit=$?\"",
        marks.path().display()
    );
    let out = run_command(&daemon, &mock, "committer", ws.path(), &script).await;
    assert!(
        out.contains(" hook=0") && out.contains(" commit=0"),
        "{out}"
    );
    std::fs::write(ws.path().join("tracked.txt"), "two\n").unwrap();
    let (_, commit) = persons_git(ws.path());
    assert!(commit);
    assert!(
        marks.path().join("hook-ran").exists(),
        "the control: the hook ran"
    );

    // Back to the default: read-only again.
    let mut edit = daemon.cli();
    edit.args(["team", "edit", "committer", "--git-write", "false"]);
    assert!(output_of(edit).await.status.success());
    let out = run_command(
        &daemon,
        &mock,
        "committer",
        ws.path(),
        "touch .git/x; echo \" t=$?\"",
    )
    .await;
    assert!(!out.contains(" t=0"), "{out}");
    daemon.stop();
}

#[test]
fn an_unprivileged_users_git_files_are_protected_through_a_user_namespace() {
    require("root (to run the helper as nobody with setpriv)", is_root());
    let ws = tempfile::tempdir().unwrap();
    repository(ws.path());
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(ws.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let script = "echo x >> .git/config; echo \" config=$?\"; \
                  mv .git .git-old; echo \" rename=$?\"; \
                  echo two > tracked.txt; echo \" worktree=$?\"; id -u";
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin("lazyboy-sandbox"))
        .args(["-r", "/", "-w", "/dev/null", "-w"])
        .arg(ws.path())
        .arg("--protect")
        .arg(ws.path().join(".git"))
        .args(["--", "sh", "-c", script])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{out} {err}");
    assert!(
        !out.contains(" config=0") && !out.contains(" rename=0"),
        "{out} {err}"
    );
    assert!(out.contains(" worktree=0"), "{out} {err}");
    assert!(
        out.trim_end().ends_with("65534"),
        "files keep their owner: {out}"
    );
    assert!(err.contains("Read-only file system"), "{err}");
    let config = std::fs::read_to_string(ws.path().join(".git/config")).unwrap();
    assert!(!config.ends_with("x\n"), "{config}");
}
