use super::orphans::process_group;
use super::*;
use crate::confine::tree::MARKER;
use crate::tools::testing;

#[test]
fn process_groups_are_read_after_the_command_name() {
    let stat = "4242 (we ird) (name)) S 1 777 777 0 -1 4194304";
    assert_eq!(process_group(stat), Some(777));
    assert_eq!(
        process_group("4242 (sleep) Z 1 777 777"),
        None,
        "a zombie has exited"
    );
    assert_eq!(process_group("garbage"), None);
}

#[tokio::test]
async fn an_orphan_is_stopped_only_through_its_marker() {
    let (_dir, ctx) = testing::ctx();
    let command = ctx.commands.start(spec(&ctx, "sleep 30")).await.unwrap();
    let pgid = command.info().pgid;
    // The spawn returns once bash's exec is under way, and bash then execs `sleep`; while a
    // process execs, /proc shows no environment for it (this test once read it then, under
    // load). Wait for `sleep` with its environment.
    let marker = format!("{MARKER}={}", command.id());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let settled = || {
        std::fs::read_to_string(format!("/proc/{pgid}/comm")).is_ok_and(|c| c.trim() == "sleep")
            && std::fs::read(format!("/proc/{pgid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
    };
    while !settled() {
        assert!(std::time::Instant::now() < deadline, "no marker in /proc");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Another command's id never matches, even in the right group.
    assert_eq!(stop_orphan("cmd-someone-else", pgid), Orphan::Gone);
    assert!(command.exit().is_none());
    assert_eq!(stop_orphan(command.id(), pgid), Orphan::Stopped);
    let end = command
        .wait_exit(Duration::from_secs(10), &CancellationToken::new())
        .await;
    assert_eq!(end, WaitEnd::Exited);
    assert_eq!(stop_orphan(command.id(), pgid), Orphan::Gone);
}

fn spec(ctx: &crate::tools::ToolContext, cmd: &str) -> StartSpec {
    StartSpec {
        machine: ctx.machine.clone(),
        task_id: ctx.task_id.clone(),
        cmd: cmd.to_owned(),
        workdir: ctx.workspace.path().to_path_buf(),
        workdir_fd: None,
        output: ctx.workspace.output().unwrap(),
        timeout: Duration::from_secs(30),
    }
}

#[test]
fn incomplete_utf8_is_held_back() {
    assert_eq!(complete_len(b"abc"), 3);
    assert_eq!(complete_len("aé".as_bytes()), 3);
    assert_eq!(complete_len(&"aé".as_bytes()[..2]), 1);
    assert_eq!(complete_len(&"😀".as_bytes()[..3]), 0);
    assert_eq!(complete_len(b""), 0);
}

#[test]
fn exit_reads_well() {
    let mut exit = Exit {
        code: Some(0),
        signal: None,
        killed: None,
        elapsed: Duration::ZERO,
    };
    assert_eq!(exit.to_string(), "exited with code 0 after 0.0 s");
    exit = Exit {
        code: None,
        signal: Some(9),
        killed: Some(KillReason::Timeout(Duration::from_secs(2))),
        elapsed: Duration::from_millis(2050),
    };
    let text = exit.to_string();
    assert_eq!(
        text,
        "killed by SIGKILL (timed out: it ran longer than 2000 ms) after 2.0 s"
    );
}

#[tokio::test]
async fn unread_output_is_bounded_in_memory_but_logged_whole() {
    let (_dir, ctx) = testing::ctx();
    let cmd = "head -c 3000000 /dev/zero | tr '\\0' a";
    let command = ctx.commands.start(spec(&ctx, cmd)).await.unwrap();
    let end = command
        .wait_exit(Duration::from_secs(10), &ctx.cancel)
        .await;
    assert_eq!(end, WaitEnd::Exited);
    let text = command.take_output();
    assert!(text.starts_with("[... "), "{}", &text[..100]);
    assert!(text.contains(" bytes of output were not kept in memory"));
    assert!(text.len() <= MEMORY_CAP + 300);
    assert_eq!(
        std::fs::metadata(ctx.workspace.path().join(&command.info().log_path))
            .unwrap()
            .len(),
        3_000_000
    );
    assert_eq!(command.take_output(), "");
}

#[tokio::test]
async fn ids_are_unique_and_dropping_the_registry_kills() {
    let (_dir, ctx) = testing::ctx();
    let registry = CommandRegistry::new();
    let a = registry.start(spec(&ctx, "sleep 30")).await.unwrap();
    let b = registry.start(spec(&ctx, "sleep 30")).await.unwrap();
    assert_ne!(a.id(), b.id());
    assert!(
        a.id().starts_with("cmd-") && a.id().len() == 16,
        "{}",
        a.id()
    );
    assert_eq!(registry.running_for_task(&ctx.task_id).len(), 2);
    drop(registry);
    for command in [a, b] {
        let end = command.wait_exit(Duration::from_secs(5), &ctx.cancel).await;
        assert_eq!(end, WaitEnd::Exited);
        assert!(
            command
                .exit()
                .unwrap()
                .to_string()
                .contains("the daemon shut down")
        );
    }
}
