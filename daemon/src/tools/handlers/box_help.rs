//! `request_box_help` {reason: login | 2fa | captcha | authorization | other, instructions}:
//! the agent needs the person in the box's browser. Effect `person`, alone in its reply.
//!
//! It takes the box's screen for the task (its agent's browser on screen), hands it to the
//! person on the task's behalf, and ends the turn with a question carrying the takeover link
//! (the daemon's `/novnc/`). The person works in the same browser; their answer ("done", or
//! any text) resumes the same task, whose next screen tool takes the lock back, and the
//! answer tells the model to look again before acting ([`answered`]).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::box_common::{BoxTask, box_error};
use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, TurnEnd, question};

pub const NAME: &str = "request_box_help";

pub struct RequestBoxHelp(pub Arc<BoxTask>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    reason: String,
    instructions: String,
}

const REASONS: [&str; 5] = ["login", "2fa", "captcha", "authorization", "other"];

/// The result a person's answer to `tool`'s question becomes.
pub fn answered(tool: &str, text: &str) -> String {
    let mut out = format!("The person answered: {text}");
    if tool == NAME {
        out.push_str(
            "\nThey worked in the box's browser while you waited, and handed it back: the page \
             may have changed. Look again (browser_snapshot or screenshot) before acting.",
        );
    }
    out
}

impl ToolHandler for RequestBoxHelp {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Ask the person to do a step in the box's browser that only they can do (log in, a \
         2FA code, a captcha, an authorization): they get a link to the box's desktop and \
         work in your browser, then answer. Call it alone, with precise instructions; your \
         task waits and continues with their answer."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "reason": {"type": "string", "enum": REASONS},
                "instructions": {"type": "string", "description": "What the person should do, precisely."}
            }),
            &["reason", "instructions"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Person
    }

    fn alone(&self) -> bool {
        true
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            if !REASONS.contains(&args.reason.as_str()) {
                return Err(crate::tools::respond(format!(
                    "reason must be one of {}",
                    REASONS.join(", ")
                )));
            }
            // The agent's own browser goes on screen, then to the person.
            self.0.screen(ctx, false).await?;
            self.0
                .sandbox
                .takeover(Some(self.0.task.clone()), true)
                .await
                .map_err(box_error)?;
            let link = self.0.sandbox.novnc_link();
            let text = format!(
                "{}\n\nTake over the box's browser at {link} (the daemon's desktop view), then \
                 answer here (\"done\", or what happened).",
                args.instructions.trim()
            );
            ctx.scope
                .record(question(&ctx.call, text, Vec::new(), Some(args.reason)))
                .await?;
            Ok(Handled::EndTurn {
                output: None,
                end: TurnEnd::AskPerson,
            })
        })
    }
}
