//! What the mock saw: each request as captured, its messages normalized to one shape for both
//! wire formats.

use serde_json::Value;

use super::{MockCall, Wire};

/// One message as the model was sent it, the same for both formats: an Anthropic user
/// message holding tool results and text becomes one `ToolResult` per result, then a `User`.
#[derive(Debug, Clone, PartialEq)]
pub enum SeenMessage {
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<MockCall>,
    },
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
    },
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    pub wire: Wire,
    pub path: String,
    /// The `Authorization` header (OpenAI), as sent.
    pub authorization: Option<String>,
    /// The `x-api-key` header (Anthropic).
    pub api_key: Option<String>,
    pub anthropic_version: Option<String>,
    pub body: Value,
    pub model: String,
    pub stream: bool,
    pub system: String,
    pub messages: Vec<SeenMessage>,
    /// The offered tools' names.
    pub tools: Vec<String>,
    /// When the request was read, just before the reply (and its first delta) is sent.
    pub received_at: std::time::Instant,
    /// The images it carried, in order.
    pub images: Vec<SeenImage>,
}

/// An image in a request: in an Anthropic tool result (`call_id` names it), or an OpenAI
/// user message's `image_url` part (the text part before it names the call).
#[derive(Debug, Clone, PartialEq)]
pub struct SeenImage {
    pub call_id: Option<String>,
    pub media_type: String,
    /// The decoded length would need a decoder; the base64 text is kept as sent.
    pub base64: String,
}

impl CapturedRequest {
    /// The text of the last user message.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|message| match message {
                SeenMessage::User { text } => Some(text.as_str()),
                _ => None,
            })
    }

    /// The content of the last tool result.
    pub fn last_tool_result(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|message| match message {
                SeenMessage::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            })
    }

    /// The content of the result answering `call_id`.
    pub fn tool_result_for(&self, call_id: &str) -> Option<&str> {
        self.messages.iter().find_map(|message| match message {
            SeenMessage::ToolResult {
                call_id: id,
                content,
                ..
            } if id == call_id => Some(content.as_str()),
            _ => None,
        })
    }
}
