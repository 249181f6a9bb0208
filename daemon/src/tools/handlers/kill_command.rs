//! `kill_command`: stops a running command and everything it started (its process group).
//! Mutating. Returns the final status and the output the model had not seen.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{command, command_report, parse, schema};
use crate::tools::commands::KillReason;
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

/// SIGKILL cannot be caught; this only bounds a wait on a process stuck in the kernel.
const EXIT_WAIT: Duration = Duration::from_secs(5);

pub struct KillCommand;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
}

impl ToolHandler for KillCommand {
    fn name(&self) -> &str {
        "kill_command"
    }

    fn description(&self) -> &str {
        "Stop a command started with exec_command (by id), with every process it started. \
         Returns its final status and the output you have not seen yet."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"id": {"type": "string", "description": "The command id from exec_command."}}),
            &["id"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let command = command(ctx, &args.id)?;
            let id = command.id();
            let had_exited = command.exit();
            // Also after the shell exited: background children may still hold the group.
            command.kill(KillReason::Requested);
            let status = match had_exited {
                Some(exit) => format!("{id} had already {exit}"),
                None => {
                    command.wait_exit(EXIT_WAIT, &ctx.cancel).await;
                    match command.exit() {
                        Some(exit) => format!("{id} {exit}"),
                        None => format!("{id} was sent SIGKILL but has not exited yet"),
                    }
                }
            };
            let text = command_report(ctx, &command, &status, command.take_output());
            Ok(Handled::Output(ToolOutput::ok(text)))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::tools::handlers::exec_command::ExecCommand;
    use crate::tools::testing::{call, command_id, ctx, eventually};

    /// Alive and not a zombie (a reparented zombie may never be reaped in a container).
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    }

    #[tokio::test]
    async fn kills_the_whole_group() {
        let (_dir, ctx) = ctx();
        let args = json!({"cmd": "sleep 100 & echo child=$!; wait", "block_until_ms": 0});
        let out = call(&ExecCommand, &ctx, args).await;
        let id = command_id(&out.text);
        let log = ctx
            .workspace
            .path()
            .join(format!(".lazyboy-output/{id}.log"));
        let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
        assert!(eventually(Duration::from_secs(5), || read_log().contains('\n')).await);
        let child = read_log().trim().trim_start_matches("child=").to_owned();
        assert!(alive(&child), "child {child} should run");
        let out = call(&KillCommand, &ctx, json!({"id": id})).await;
        assert!(!out.is_error, "{}", out.text);
        assert!(
            out.text.contains("killed by SIGKILL (kill_command)"),
            "{}",
            out.text
        );
        assert!(
            eventually(Duration::from_secs(5), || !alive(&child)).await,
            "child {child} survived"
        );
        assert!(ctx.commands.running_for_task(&ctx.task_id).is_empty());
    }

    #[tokio::test]
    async fn finished_and_unknown_commands() {
        let (_dir, ctx) = ctx();
        let out = call(&ExecCommand, &ctx, json!({"cmd": "echo done"})).await;
        let id = command_id(&out.text);
        let out = call(&KillCommand, &ctx, json!({"id": id})).await;
        assert!(
            !out.is_error && out.text.contains("had already exited with code 0"),
            "{}",
            out.text
        );
        let out = call(&KillCommand, &ctx, json!({"id": "cmd-nope"})).await;
        assert!(
            out.is_error && out.text.contains("unknown command id: cmd-nope"),
            "{}",
            out.text
        );
    }
}
