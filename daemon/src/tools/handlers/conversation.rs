//! `read_conversation` {query?, before_seq?, limit?, seq?, include_cleared?}: the agent's
//! whole original conversation across its tasks, searched (full text, any word) or paged
//! newest first; `seq` fetches one event whole (what a stub in a trimmed request names).
//! Read-only; it reaches only the calling task's agent.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::store::conversation::Query;
use crate::tools::{
    Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond, spill,
};

const DEFAULT_LIMIT: u32 = 20;
const MAX_LIMIT: u32 = 200;

pub struct ReadConversation;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: Option<String>,
    before_seq: Option<i64>,
    limit: Option<u32>,
    seq: Option<i64>,
    #[serde(default)]
    include_cleared: bool,
}

impl ToolHandler for ReadConversation {
    fn name(&self) -> &str {
        "read_conversation"
    }

    fn description(&self) -> &str {
        "Read your conversation with the person across all your tasks, as it was said (the \
         requests you see keep only the recent part and a summary). With `query`: the lines \
         matching any of its words, newest first; without: the lines before `before_seq` (or \
         the newest), newest first. `seq`: one event whole, e.g. a tool result that was left \
         out to fit the context window. `include_cleared`: also search before the last time \
         the person cleared your conversation."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "query": {"type": "string"},
                "before_seq": {"type": "integer"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                "seq": {"type": "integer"},
                "include_cleared": {"type": "boolean"}
            }),
            &[],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let conversation = ctx.scope.conversation();
            if let Some(seq) = args.seq {
                let Some((kind, data)) = conversation.event(seq).await? else {
                    return Err(respond(format!("no event {seq} in your conversation")));
                };
                let text = format!("#{seq} {kind}: {data}");
                return Ok(Handled::Output(ToolOutput::ok(spill::limit(ctx, text))));
            }
            let query = Query {
                words: args.query,
                before_seq: args.before_seq,
                limit: args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
                include_cleared: args.include_cleared,
            };
            let lines = conversation.search(&query).await?;
            if lines.is_empty() {
                return Ok(Handled::Output(ToolOutput::ok("nothing found")));
            }
            let text: Vec<String> = lines
                .iter()
                .map(|l| {
                    let task = l.task.as_deref().unwrap_or("chat");
                    format!("#{} [{task}] {}: {}", l.seq, l.who, l.text)
                })
                .collect();
            Ok(Handled::Output(ToolOutput::ok(spill::limit(
                ctx,
                text.join("\n"),
            ))))
        })
    }
}
