//! `await_command`: waits for a running command to finish, up to a timeout. Wait.
//!
//! Returns promptly on exit or cancellation; the output shown is only what the model has not
//! seen yet, and `new_output` says whether there was any (the loop fuses count empty waits).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{command, command_report, parse, schema};
use crate::tools::commands::WaitEnd;
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

const DEFAULT_TIMEOUT_MS: u64 = 30_000;

pub struct AwaitCommand;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    timeout_ms: Option<u64>,
}

impl ToolHandler for AwaitCommand {
    fn name(&self) -> &str {
        "await_command"
    }

    fn description(&self) -> &str {
        "Wait for a command started with exec_command (by id) to finish, up to `timeout_ms` \
         (default 30000). Returns its status (exit code, or still running) and the output you \
         have not seen yet."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "id": {"type": "string", "description": "The command id from exec_command."},
                "timeout_ms": {"type": "integer", "minimum": 0, "description": "Longest wait. Default 30000."},
            }),
            &["id"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn preview<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _args: &'a Value,
    ) -> BoxFuture<'a, Option<lazyboy_protocol::Approval>> {
        // Waiting for a command starts nothing: there is nothing to approve.
        Box::pin(async { None })
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let command = command(ctx, &args.id)?;
            let timeout = Duration::from_millis(args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
            let end = command.wait_exit(timeout, &ctx.cancel).await;
            let id = command.id();
            let (status, failed) = match (end, command.exit()) {
                (_, Some(exit)) => (format!("{id} {exit}"), !exit.success()),
                (WaitEnd::Cancelled, None) => (
                    format!("the wait was cancelled; {id} is still running"),
                    false,
                ),
                (_, None) => (
                    format!(
                        "{id} is still running after waiting {:.1} s",
                        timeout.as_secs_f64()
                    ),
                    false,
                ),
            };
            let output = command.take_output();
            let new_output = !output.is_empty();
            let text = command_report(ctx, &command, &status, output);
            Ok(Handled::Output(ToolOutput {
                text,
                is_error: failed,
                new_output,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::handlers::exec_command::ExecCommand;
    use crate::tools::testing::{call, command_id, ctx};

    #[tokio::test]
    async fn gets_the_new_output_and_the_exit() {
        let (_dir, ctx) = ctx();
        let args = json!({"cmd": "echo one; sleep 0.3; echo two", "block_until_ms": 50});
        let first = call(&ExecCommand, &ctx, args).await;
        let id = command_id(&first.text);
        let out = call(&AwaitCommand, &ctx, json!({"id": id})).await;
        assert!(!out.is_error && out.new_output, "{out:?}");
        assert!(
            out.text.contains("exited with code 0") && out.text.contains("two\n"),
            "{}",
            out.text
        );
        // Every line is shown once: the read cursor moved past what exec_command showed.
        assert_eq!((first.text + &out.text).matches("one\n").count(), 1);
        let again = call(&AwaitCommand, &ctx, json!({"id": id})).await;
        assert!(
            !again.new_output && again.text.contains("(no new output)"),
            "{}",
            again.text
        );
    }

    #[tokio::test]
    async fn times_out_while_running_and_flags_failures() {
        let (_dir, ctx) = ctx();
        let out = call(
            &ExecCommand,
            &ctx,
            json!({"cmd": "sleep 30", "block_until_ms": 0}),
        )
        .await;
        let id = command_id(&out.text);
        let out = call(&AwaitCommand, &ctx, json!({"id": id, "timeout_ms": 100})).await;
        assert!(!out.is_error && !out.new_output, "{out:?}");
        assert!(
            out.text.contains("is still running after waiting 0.1 s"),
            "{}",
            out.text
        );
        ctx.commands.kill_task(&ctx.task_id);
        let out = call(&AwaitCommand, &ctx, json!({"id": id})).await;
        assert!(
            out.is_error && out.text.contains("killed by SIGKILL"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn commands_of_other_tasks_are_unknown_even_in_the_same_workspace() {
        let (_dir, mut ctx) = ctx();
        let out = call(
            &ExecCommand,
            &ctx,
            json!({"cmd": "sleep 30", "block_until_ms": 0}),
        )
        .await;
        let id = command_id(&out.text);
        // Another task in the same workspace (another agent's, a subagent, its parent) may
        // not follow it: the same answer as for an id that never existed.
        ctx.task_id = "task-2".to_owned();
        let out = call(&AwaitCommand, &ctx, json!({"id": id, "timeout_ms": 0})).await;
        assert!(
            out.is_error && out.text.contains(&format!("unknown command id: {id}")),
            "{}",
            out.text
        );
        ctx.task_id = "task-1".to_owned();
        let out = call(&AwaitCommand, &ctx, json!({"id": id, "timeout_ms": 0})).await;
        assert!(
            !out.is_error && out.text.contains("still running"),
            "{}",
            out.text
        );
        ctx.commands.kill_all();
    }
}
