//! What a stream delivered, turned into a [`ModelReply`]; shared by both wire formats.
//!
//! The rule for a stream that ends without its terminator (`[DONE]`, `message_stop`) and
//! without a finish reason: what arrived is accepted when it is coherent — every tool call
//! has a name, and its arguments parse as JSON — because servers and proxies do drop the
//! terminator of a finished reply. Otherwise the reply was cut mid tool call and the attempt
//! is a (retryable) protocol error. A finished reply's arguments are passed through raw even
//! when they are not JSON: the agent loop tells the model so, as that call's result.

use serde_json::Value;

use super::attempt::AttemptError;
use super::{ModelReply, Provider, TokenUsage, ToolCall};

/// One tool call as its fragments arrived.
#[derive(Debug, Default)]
pub(super) struct PartialCall {
    /// The wire format's key for this call (OpenAI `index`, Anthropic content-block index).
    pub key: Option<u64>,
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl PartialCall {
    /// A slot the server opened but never filled (explicit nulls everywhere).
    fn is_blank(&self) -> bool {
        self.id.is_empty() && self.name.is_empty() && self.arguments.trim().is_empty()
    }
}

/// The reply so far.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    pub text: String,
    pub calls: Vec<PartialCall>,
    pub finish_reason: Option<String>,
    /// The stream's own terminator arrived.
    pub terminated: bool,
    /// The provider's count of the request's tokens, when it sent one.
    pub usage: Option<TokenUsage>,
}

impl Assembly {
    /// Appends a text delta and shows it at once.
    pub fn push_text(&mut self, text: &str, on_text: &mut (dyn FnMut(&str) + Send)) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_text(text);
        }
    }

    /// The reply, or why it cannot be trusted (see the module doc).
    pub fn finish(self, provider: &Provider) -> Result<ModelReply, AttemptError> {
        let complete = self.terminated || self.finish_reason.is_some();
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for call in self.calls.into_iter().filter(|call| !call.is_blank()) {
            if call.name.is_empty() {
                let why = if complete {
                    "a tool call has no name"
                } else {
                    "the stream ended before a tool call's name arrived"
                };
                return Err(AttemptError::protocol(provider, why));
            }
            // Servers send "" for a call without arguments; "{}" is what that means.
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                call.arguments
            };
            if !complete && serde_json::from_str::<Value>(&arguments).is_err() {
                return Err(AttemptError::protocol(
                    provider,
                    format!(
                        "the stream ended in the middle of the arguments of tool call `{}`",
                        call.name
                    ),
                ));
            }
            // Some local servers send no id (or one id for every call); the conversation needs
            // a unique one to pair each result with its call.
            let taken = tool_calls.iter().any(|done: &ToolCall| done.id == call.id);
            let id = if call.id.is_empty() || taken {
                format!("call_{}", uuid::Uuid::now_v7().simple())
            } else {
                call.id
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                arguments,
            });
        }
        Ok(ModelReply {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason,
            usage: self.usage,
        })
    }
}
