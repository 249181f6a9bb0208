//! `request_user_input` {question, options?} and `request_takeover` {reason, instructions}:
//! the agent asks the person and waits. Effect `person`, each alone in its reply: the turn
//! ends with the question recorded, the task waits, and the person's answer becomes the
//! call's one result (`Runtime::answer`).

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, TurnEnd, question};

pub const USER_INPUT: &str = "request_user_input";
pub const TAKEOVER: &str = "request_takeover";
/// The tools that ask the person (a subagent never has them).
pub const NAMES: [&str; 2] = [USER_INPUT, TAKEOVER];

pub struct RequestUserInput;
pub struct RequestTakeover;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Takeover {
    reason: String,
    instructions: String,
}

impl ToolHandler for RequestUserInput {
    fn name(&self) -> &str {
        USER_INPUT
    }

    fn description(&self) -> &str {
        "Ask the person a question you cannot answer yourself (a choice, a missing fact, a \
         confirmation before something irreversible) and wait for the answer. Call it alone. \
         Give options when there are a few clear choices."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}}
            }),
            &["question"],
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
            let input: Input = parse(self, args)?;
            ask(ctx, input.question, input.options, None).await
        })
    }
}

impl ToolHandler for RequestTakeover {
    fn name(&self) -> &str {
        TAKEOVER
    }

    fn description(&self) -> &str {
        "Hand control to the person for a step only they can do (log in, a 2FA code, a \
         captcha, an authorization) and wait until they say it is done. Call it alone, with \
         precise instructions."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "reason": {"type": "string", "enum": ["login", "2fa", "captcha", "authorization", "other"]},
                "instructions": {"type": "string"}
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
            let takeover: Takeover = parse(self, args)?;
            ask(
                ctx,
                takeover.instructions,
                Vec::new(),
                Some(takeover.reason),
            )
            .await
        })
    }
}

/// Records the question; the turn ends, and the person's answer will be the call's result.
async fn ask(
    ctx: &ToolContext,
    text: String,
    options: Vec<String>,
    takeover: Option<String>,
) -> ToolOutcome {
    ctx.scope
        .record(question(&ctx.call, text, options, takeover))
        .await?;
    Ok(Handled::EndTurn {
        output: None,
        end: TurnEnd::AskPerson,
    })
}
