//! `exec_command`: starts a shell command and waits a while for it. Mutating.
//!
//! The command belongs to the [`CommandRegistry`](crate::tools::CommandRegistry), not to this
//! call: when the wait ends first the command keeps running, and the model follows it with
//! `await_command`, `write_stdin` and `kill_command` by id. The output shown here advances the
//! command's read cursor, so later calls show only what came after.

use std::time::Duration;

use futures_util::future::BoxFuture;
use lazyboy_protocol::Approval;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{command_report, parse, path_error, rel, schema};
use crate::tools::commands::{StartSpec, WaitEnd};
use crate::tools::workspace::{self, PathError};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

const DEFAULT_BLOCK_MS: u64 = 30_000;
const DEFAULT_TIMEOUT_MS: u64 = 600_000;

pub struct ExecCommand;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    cmd: String,
    workdir: Option<String>,
    block_until_ms: Option<u64>,
    timeout_ms: Option<u64>,
}

impl ToolHandler for ExecCommand {
    fn name(&self) -> &str {
        "exec_command"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the workspace or in `workdir`, and wait up to \
         `block_until_ms` (default 30000) for it to finish. Returns the exit code and the output \
         (stdout and stderr together). If it is still running, you get its id: follow it with \
         await_command, answer prompts with write_stdin, stop it with kill_command. Use a short \
         block_until_ms for servers and watchers. The command is killed after `timeout_ms` \
         (default 600000). Its full output is also logged to the file named in the result."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "cmd": {"type": "string", "description": "The shell command line."},
                "workdir": {"type": "string", "description": "Directory to run in, relative to the workspace. Default \".\"."},
                "block_until_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for it to finish before returning. Default 30000."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Kill it after this long. Default 600000."},
            }),
            &["cmd"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn preview<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        args: &'a Value,
    ) -> BoxFuture<'a, Option<Approval>> {
        Box::pin(async move {
            // Arguments that do not parse only get an error: nothing to approve.
            let parsed: Args = serde_json::from_value(args.clone()).ok()?;
            let workdir = parsed.workdir.unwrap_or_else(|| ".".to_owned());
            Some(Approval {
                command: Some(parsed.cmd.clone()),
                workdir: Some(workdir.clone()),
                ..Approval::new(
                    self.name(),
                    Effect::Command,
                    format!("run `{}` in {workdir}", parsed.cmd),
                    args.to_string(),
                )
            })
        })
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let dir = rel(ctx, args.workdir.as_deref().unwrap_or("."))?;
            // Opened beneath the workspace and handed to the child as `/proc/self/fd/N`: the
            // command starts in this directory even if the path is swapped meanwhile.
            let fd = ctx.workspace.open_dir(&dir).map_err(|e| match e {
                PathError::NotFound(shown) | PathError::NotDir(shown) => {
                    ToolOutput::error(format!("the working directory {shown} is not a directory"))
                }
                other => path_error(other),
            })?;
            let fallback = ctx.workspace.path().join(dir.path());
            let workdir = workspace::dir_path(std::os::fd::AsFd::as_fd(&fd), &fallback);
            let output = ctx
                .workspace
                .output()
                .map_err(|e| ToolOutput::error(e.to_string()))?;
            let timeout =
                Duration::from_millis(args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1));
            let spec = StartSpec {
                machine: ctx.machine.clone(),
                task_id: ctx.task_id.clone(),
                cmd: args.cmd,
                workdir,
                workdir_fd: Some(std::sync::Arc::new(fd)),
                output,
                timeout,
            };
            let command = ctx
                .commands
                .start(spec)
                .await
                .map_err(|e| ToolOutput::error(e.to_string()))?;
            let block = Duration::from_millis(args.block_until_ms.unwrap_or(DEFAULT_BLOCK_MS));
            let end = command.wait_exit(block, &ctx.cancel).await;
            let id = command.id();
            let (status, failed) = match (end, command.exit()) {
                // The exit wins even when the wait ended otherwise at the same moment.
                (_, Some(exit)) => (format!("{id} {exit}"), !exit.success()),
                (WaitEnd::Cancelled, None) => (
                    format!("the wait was cancelled; {id} is still running"),
                    false,
                ),
                _ => (
                    format!(
                        "still running as {id} after {:.1} s: use await_command to wait for it, \
                         write_stdin to answer it, kill_command to stop it",
                        block.as_secs_f64()
                    ),
                    false,
                ),
            };
            let text = command_report(ctx, &command, &status, command.take_output());
            Ok(Handled::Output(ToolOutput {
                text,
                is_error: failed,
                new_output: false,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::tools::testing::{ESCAPES, call, command_id, ctx};

    #[tokio::test]
    async fn quick_command_returns_early_with_code_and_output() {
        let (_dir, ctx) = ctx();
        let started = Instant::now();
        let args = json!({"cmd": "echo hello; echo oops >&2; exit 3"});
        let out = call(&ExecCommand, &ctx, args).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(out.is_error, "a non-zero exit is flagged");
        assert!(out.text.contains("exited with code 3"), "{}", out.text);
        assert!(
            out.text.contains("hello\n") && out.text.contains("oops\n"),
            "{}",
            out.text
        );
        let id = command_id(&out.text);
        let log = ctx
            .workspace
            .path()
            .join(format!(".lazyboy-output/{id}.log"));
        assert!(
            out.text.contains(&format!("log: .lazyboy-output/{id}.log")),
            "{}",
            out.text
        );
        let logged = std::fs::read_to_string(log).unwrap();
        assert!(logged.contains("hello\n") && logged.contains("oops\n"));
        assert!(ctx.commands.running_for_task(&ctx.task_id).is_empty());
    }

    #[tokio::test]
    async fn long_command_keeps_running_under_its_id() {
        let (_dir, ctx) = ctx();
        let args = json!({"cmd": "echo started; sleep 30", "block_until_ms": 300});
        let out = call(&ExecCommand, &ctx, args).await;
        assert!(
            !out.is_error && out.text.contains("still running as cmd-"),
            "{}",
            out.text
        );
        let id = command_id(&out.text);
        let running = ctx.commands.running_for_task(&ctx.task_id);
        assert_eq!(running.len(), 1);
        assert_eq!(
            (running[0].id.as_str(), running[0].cmd.as_str()),
            (id.as_str(), "echo started; sleep 30")
        );
        assert!(ctx.commands.running_for_task("another-task").is_empty());
        ctx.commands.kill_task(&ctx.task_id);
        let command = ctx.commands.get(&id).unwrap();
        let end = command.wait_exit(Duration::from_secs(5), &ctx.cancel).await;
        assert_eq!(end, WaitEnd::Exited);
        assert!(
            command
                .exit()
                .unwrap()
                .to_string()
                .contains("the task was stopped")
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_command() {
        let (_dir, ctx) = ctx();
        let started = Instant::now();
        let args = json!({"cmd": "sleep 30", "timeout_ms": 300, "block_until_ms": 10000});
        let out = call(&ExecCommand, &ctx, args).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            out.is_error && out.text.contains("killed by SIGKILL (timed out"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn cancel_returns_a_blocked_exec_promptly() {
        let (_dir, ctx) = ctx();
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let started = Instant::now();
        let out = call(&ExecCommand, &ctx, json!({"cmd": "sleep 30"})).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(out.text.contains("the wait was cancelled"), "{}", out.text);
        ctx.commands.kill_task(&ctx.task_id);
    }

    #[tokio::test]
    async fn workdir_is_resolved_and_confined() {
        let (_dir, ctx) = ctx();
        std::fs::create_dir(ctx.workspace.path().join("sub")).unwrap();
        let out = call(&ExecCommand, &ctx, json!({"cmd": "pwd", "workdir": "sub"})).await;
        assert!(
            out.text
                .contains(&format!("{}/sub\n", ctx.workspace.path().display())),
            "{}",
            out.text
        );
        for path in ESCAPES {
            let out = call(&ExecCommand, &ctx, json!({"cmd": "pwd", "workdir": path})).await;
            assert!(
                out.is_error && out.text.contains("workspace"),
                "{path}: {}",
                out.text
            );
        }
        let out = call(&ExecCommand, &ctx, json!({"cmd": "pwd", "workdir": "nope"})).await;
        assert!(
            out.is_error && out.text.contains("is not a directory"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn long_output_spills_to_a_file() {
        let (_dir, ctx) = ctx();
        let out = call(&ExecCommand, &ctx, json!({"cmd": "seq 1 20000"})).await;
        assert!(
            out.text
                .contains("the whole output is in .lazyboy-output/call-1.txt"),
            "{}",
            out.text
        );
        assert!(out.text.contains("\n1\n2\n") && out.text.ends_with("19999\n20000\n"));
        let spilled =
            std::fs::read_to_string(ctx.workspace.path().join(".lazyboy-output/call-1.txt"))
                .unwrap();
        assert_eq!(spilled.lines().count(), 20000);
    }
}
