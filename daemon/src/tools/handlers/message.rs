//! `send_message` {text}: the only voice the person hears; `report_progress` {text}: the
//! same, saying the work goes on (the turn continues either way). Control.

use futures_util::future::BoxFuture;
use lazyboy_protocol::EventBody;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond};

pub const NAME: &str = "send_message";

pub struct SendMessage;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    text: String,
}

impl ToolHandler for SendMessage {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Say something to the person. This is the ONLY way they hear you: plain reply text is \
         your private scratchpad. Use it for the answer, for important progress, and when you \
         finish."
    }

    fn parameters(&self) -> Value {
        schema(json!({"text": {"type": "string"}}), &["text"])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(say(self, ctx, args, "sent"))
    }
}

pub struct ReportProgress;

impl ToolHandler for ReportProgress {
    fn name(&self) -> &str {
        "report_progress"
    }

    fn description(&self) -> &str {
        "Tell the person how the work is going while it goes on (what is done, what comes \
         next). Shown to them as a message; your turn continues. Use it at milestones of long \
         work, not for every step."
    }

    fn parameters(&self) -> Value {
        schema(json!({"text": {"type": "string"}}), &["text"])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(say(self, ctx, args, "shown to the person; carry on"))
    }
}

/// Records the message for the person (both tools speak the same way).
async fn say(tool: &dyn ToolHandler, ctx: &ToolContext, args: Value, ok: &str) -> ToolOutcome {
    let args: Args = parse(tool, args)?;
    if args.text.trim().is_empty() {
        return Err(respond(format!("{} needs a non-empty text", tool.name())));
    }
    ctx.scope
        .record(EventBody::AgentMessage { text: args.text })
        .await?;
    Ok(Handled::Output(ToolOutput::ok(ok)))
}
