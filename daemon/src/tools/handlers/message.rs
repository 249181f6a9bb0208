//! `send_message` {text}: the only voice the person hears. Control.

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
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            if args.text.trim().is_empty() {
                return Err(respond("send_message needs a non-empty text"));
            }
            ctx.scope
                .record(EventBody::AgentMessage { text: args.text })
                .await?;
            Ok(Handled::Output(ToolOutput::ok("sent")))
        })
    }
}
