//! `write_stdin`: types into a running command (a prompt, a REPL) and returns its reply. Wait.
//!
//! After writing, it waits briefly for the reply: up to [`REPLY_WAIT`], returning once output
//! arrived and then stayed quiet for [`QUIET`], or on exit. `new_output` tells the loop fuses
//! whether the model learned anything.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{command, command_report, parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

const REPLY_WAIT: Duration = Duration::from_secs(1);
const QUIET: Duration = Duration::from_millis(100);
/// A command that does not read its stdin fills the pipe; do not hang on it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

pub struct WriteStdin;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    chars: String,
    #[serde(default)]
    eof: bool,
}

impl ToolHandler for WriteStdin {
    fn name(&self) -> &str {
        "write_stdin"
    }

    fn description(&self) -> &str {
        "Write text to the stdin of a command started with exec_command (by id), e.g. an answer \
         to a prompt; end it with \"\\n\" to press Enter. Set `eof` to true to close stdin \
         afterwards. Waits up to 1 s for the reply and returns the output you have not seen yet."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "id": {"type": "string", "description": "The command id from exec_command."},
                "chars": {"type": "string", "description": "Text to write; may be empty (e.g. with eof)."},
                "eof": {"type": "boolean", "description": "Close stdin after writing. Default false."},
            }),
            &["id", "chars"],
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
            let failure = if let Some(exit) = command.exit() {
                Some(format!("{id} has already {exit}; nothing was written"))
            } else {
                let write = command.write_stdin(args.chars.as_bytes(), args.eof);
                match tokio::time::timeout(WRITE_TIMEOUT, write).await {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(format!("cannot write to {id}: {e}")),
                    Err(_) => Some(format!("{id} is not reading its stdin (the pipe is full)")),
                }
            };
            if failure.is_none() {
                command.wait_reply(REPLY_WAIT, QUIET, &ctx.cancel).await;
            }
            let status = match (&failure, command.exit()) {
                (Some(failure), _) => failure.clone(),
                (None, Some(exit)) => format!("{id} {exit}"),
                (None, None) => format!("{id} is still running"),
            };
            let output = command.take_output();
            let new_output = !output.is_empty();
            let text = command_report(ctx, &command, &status, output);
            Ok(Handled::Output(ToolOutput {
                text,
                is_error: failure.is_some(),
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

    async fn start(ctx: &ToolContext, cmd: &str) -> String {
        let out = call(&ExecCommand, ctx, json!({"cmd": cmd, "block_until_ms": 50})).await;
        assert!(out.text.contains("still running"), "{}", out.text);
        command_id(&out.text)
    }

    #[tokio::test]
    async fn answers_a_prompt_and_returns_the_reply() {
        let (_dir, ctx) = ctx();
        let id = start(&ctx, "read x; echo got $x").await;
        let out = call(&WriteStdin, &ctx, json!({"id": id, "chars": "hi\n"})).await;
        assert!(!out.is_error && out.new_output, "{out:?}");
        assert!(out.text.contains("got hi\n"), "{}", out.text);
        // The exit usually shows in the same reply; under load it may come just after.
        let command = ctx.commands.get(&id).unwrap();
        let end = command.wait_exit(Duration::from_secs(5), &ctx.cancel).await;
        assert_eq!(end, crate::tools::commands::WaitEnd::Exited);
        let out = call(&WriteStdin, &ctx, json!({"id": id, "chars": "again\n"})).await;
        assert!(
            out.is_error && out.text.contains("has already exited"),
            "{}",
            out.text
        );
        assert!(!out.new_output);
    }

    #[tokio::test]
    async fn cat_echoes_until_eof() {
        let (_dir, ctx) = ctx();
        let id = start(&ctx, "cat").await;
        let out = call(&WriteStdin, &ctx, json!({"id": id, "chars": "abc\n"})).await;
        assert!(
            out.new_output && out.text.contains("is still running"),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("output:\nabc\n"), "{}", out.text);
        let out = call(
            &WriteStdin,
            &ctx,
            json!({"id": id, "chars": "", "eof": true}),
        )
        .await;
        assert!(out.text.contains("exited with code 0"), "{}", out.text);
        assert!(
            !out.new_output && out.text.contains("(no new output)"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn unknown_ids_list_the_running_commands() {
        let (_dir, ctx) = ctx();
        let id = start(&ctx, "cat").await;
        let out = call(&WriteStdin, &ctx, json!({"id": "cmd-0", "chars": "x"})).await;
        assert!(out.is_error, "{}", out.text);
        assert!(
            out.text.contains(&format!("(your running commands: {id})")),
            "{}",
            out.text
        );
        ctx.commands.kill_all();
    }
}
