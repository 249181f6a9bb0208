//! `box_shell` {command, workdir?, block_until_ms?}, `box_await` {id, timeout_ms?},
//! `box_kill` {id}: commands in the box (no lock needed).
//!
//! `box_shell` runs `bash -lc` as `box` (uid 1000) in the agent's own directory in the box,
//! `/home/box/work/<agent>`, through the same command registry as `exec_command`: its output
//! is logged to the host workspace's `.lazyboy-output/`, the result shows head and tail, and
//! after `block_until_ms` (default 30 s) it goes on in the background under its id.
//! `box_await` and `box_kill` are `await_command` and `kill_command` for box commands; a
//! kill stops the processes inside the container too (see `sandbox::machine`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::await_command::AwaitCommand;
use super::box_common::BoxTask;
use super::kill_command::KillCommand;
use super::{command, command_report, parse, schema};
use crate::tools::commands::{StartSpec, WaitEnd};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond};

const DEFAULT_BLOCK_MS: u64 = 30_000;
const DEFAULT_TIMEOUT_MS: u64 = 600_000;

pub struct BoxShell(pub Arc<BoxTask>);
pub struct BoxAwait;
pub struct BoxKill;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    workdir: Option<String>,
    block_until_ms: Option<u64>,
    timeout_ms: Option<u64>,
}

impl ToolHandler for BoxShell {
    fn name(&self) -> &str {
        "box_shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -lc) IN THE BOX, the shared Linux desktop in Docker (not \
         on the host: use exec_command for the workspace). It runs as user box in your own \
         directory /home/box/work/<agent> (or `workdir`: absolute, or relative to it), and \
         waits up to `block_until_ms` (default 30000). Returns the exit code and the output; \
         if it still runs you get its id for box_await and box_kill. Tools installed with \
         apt need root: use sudo-less alternatives or ask the person. Killed after \
         `timeout_ms` (default 600000)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "command": {"type": "string", "description": "The shell command line, run in the box."},
                "workdir": {"type": "string", "description": "Directory in the box; relative to /home/box/work/<agent>."},
                "block_until_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for it before returning. Default 30000."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Kill it after this long. Default 600000."},
            }),
            &["command"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let live = self.0.live().await?;
            let home = self
                .0
                .sandbox
                .workdir(&live, self.0.agent())
                .await
                .map_err(super::box_common::box_error)?;
            let workdir = match args.workdir.as_deref().map(str::trim) {
                None | Some("" | ".") => home,
                Some(dir) => self.0.path(&live, dir).await?,
            };
            let output = ctx
                .workspace
                .output()
                .map_err(|e| ToolOutput::error(e.to_string()))?;
            let spec = StartSpec {
                machine: Arc::new(self.0.sandbox.machine(&live)),
                task_id: ctx.task_id.clone(),
                cmd: args.command,
                workdir: workdir.into(),
                workdir_fd: None,
                output,
                timeout: Duration::from_millis(
                    args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1),
                ),
            };
            let command = ctx
                .commands
                .start(spec)
                .await
                .map_err(|e| ToolOutput::error(format!("in the box: {e}")))?;
            let block = Duration::from_millis(args.block_until_ms.unwrap_or(DEFAULT_BLOCK_MS));
            let end = command.wait_exit(block, &ctx.cancel).await;
            let id = command.id();
            let (status, failed) = match (end, command.exit()) {
                (_, Some(exit)) => (format!("{id} (in the box) {exit}"), !exit.success()),
                (WaitEnd::Cancelled, None) => (
                    format!("the wait was cancelled; {id} is still running in the box"),
                    false,
                ),
                _ => (
                    format!(
                        "still running in the box as {id} after {:.1} s: use box_await to wait \
                         for it, box_kill to stop it",
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

/// Only box commands answer to the box's tools.
fn box_command(ctx: &ToolContext, args: &Value) -> Result<(), ToolOutput> {
    let id = args["id"].as_str().unwrap_or_default();
    match command(ctx, id) {
        Ok(command) if command.machine() != "box" => Err(ToolOutput::error(format!(
            "{id} runs on the host, not in the box: use await_command / kill_command"
        ))),
        Ok(_) => Ok(()),
        Err(error) => Err(error),
    }
}

impl ToolHandler for BoxAwait {
    fn name(&self) -> &str {
        "box_await"
    }

    fn description(&self) -> &str {
        "Wait for a command started with box_shell (by id) to finish, up to `timeout_ms` \
         (default 30000). Returns its status and the output you have not seen yet."
    }

    fn parameters(&self) -> Value {
        AwaitCommand.parameters()
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if args["id"].is_string() {
                box_command(ctx, &args)?;
            } else {
                return Err(respond("box_await needs the id box_shell returned"));
            }
            AwaitCommand.handle(ctx, args).await
        })
    }
}

impl ToolHandler for BoxKill {
    fn name(&self) -> &str {
        "box_kill"
    }

    fn description(&self) -> &str {
        "Stop a command started with box_shell (by id), with every process it started in \
         the box. Returns its final status and the output you have not seen yet."
    }

    fn parameters(&self) -> Value {
        KillCommand.parameters()
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if args["id"].is_string() {
                box_command(ctx, &args)?;
            } else {
                return Err(respond("box_kill needs the id box_shell returned"));
            }
            KillCommand.handle(ctx, args).await
        })
    }
}
