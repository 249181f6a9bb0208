//! Anthropic Messages: `POST {base_url}/v1/messages` with `stream: true`.
//!
//! - Sent: `system` apart; messages strictly alternate user/assistant, so neighbours of the
//!   same role merge into one message (consecutive tool results and a following user text
//!   become ONE user message), and within a user message the `tool_result` blocks come
//!   first, as the API requires. Assistant tool calls become `tool_use` blocks whose `input`
//!   is the parsed arguments object (`{}` when the stored arguments are not a JSON object).
//!   Blank text blocks, which the API rejects, are left out, and so is a message left empty.
//! - Read: `content_block_start` (text or tool_use), `content_block_delta` (`text_delta`,
//!   `input_json_delta`), `message_delta` (stop reason), `message_stop`; `ping` and unknown
//!   events (thinking, citations) are ignored. An `error` event becomes an HTTP error with
//!   the status its type stands for (`overloaded_error` → 529, retried). A stream that ends
//!   before `message_stop` follows the rule in `assemble.rs`.

use reqwest::header::HeaderValue;
use serde_json::{Map, Value, json};

use super::assemble::{Assembly, PartialCall};
use super::attempt::{AttemptError, Retry};
use super::sse::{self, Body, Events};
use super::{Message, ModelReply, ModelRequest, Provider, ProviderError};

/// The API version this reader understands.
const API_VERSION: &str = "2023-06-01";
/// The reply's length budget; the API requires one.
const MAX_TOKENS: u32 = 8192;

/// One attempt: send, then read the stream (or the JSON body) into a reply.
pub(super) async fn complete_once(
    provider: &Provider,
    request: &ModelRequest,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ModelReply, AttemptError> {
    let config = &provider.config;
    let base = config.base_url.trim_end_matches('/');
    // Accept a base URL given with or without the version segment.
    let url = match base.strip_suffix("/v1") {
        Some(root) => format!("{root}/v1/messages"),
        None => format!("{base}/v1/messages"),
    };
    let mut http = provider
        .http
        .post(url)
        .header("anthropic-version", API_VERSION);
    if let Some(key) = &config.api_key {
        let Ok(mut value) = HeaderValue::from_str(key) else {
            return Err(AttemptError {
                error: ProviderError::Transport {
                    provider: config.name.clone(),
                    message: "the API key is not a valid HTTP header value".into(),
                },
                retry: Retry::Never,
            });
        };
        // Keeps the key out of any Debug output of the request.
        value.set_sensitive(true);
        http = http.header("x-api-key", value);
    }
    let body = request_body(&config.model, request);
    let mut reader = Reader::default();
    match sse::send(provider, http, &body).await? {
        Body::Json(json) => reader.read_whole(provider, &json, on_text)?,
        Body::Events(events) => reader.read_stream(provider, events, on_text).await?,
    }
    reader.finish(provider)
}

/// The request body (pure, for tests).
fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": MAX_TOKENS,
        "messages": messages(&request.messages),
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = Value::String(request.system.clone());
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

/// The conversation as alternating user/assistant messages (see the module doc).
fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut merged: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            // An image block inside the result it goes with.
            Message::Image {
                call_id,
                media_type,
                data: Some(data),
                ..
            } => {
                let result = merged.last_mut().and_then(|(_, blocks)| {
                    blocks
                        .iter_mut()
                        .rev()
                        .find(|b| b["tool_use_id"] == *call_id)
                });
                if let Some(result) = result {
                    let text = result["content"].take();
                    let mut content = match text {
                        Value::String(text) => vec![json!({"type": "text", "text": text})],
                        Value::Array(blocks) => blocks,
                        _ => Vec::new(),
                    };
                    content.push(json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": media_type, "data": data},
                    }));
                    result["content"] = Value::Array(content);
                }
                continue;
            }
            Message::Image { .. } => continue,
            Message::User { text } => ("user", text_block(text).into_iter().collect()),
            Message::Assistant { text, tool_calls } => {
                let mut blocks: Vec<Value> = text_block(text).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": input_object(&call.arguments),
                    })
                }));
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": is_error,
                })],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => merged.push((role, blocks)),
        }
    }
    merged
        .into_iter()
        .map(|(role, mut content)| {
            // Stable: results keep their order, then the text keeps its own.
            content.sort_by_key(|block| block["type"] != "tool_result");
            json!({ "role": role, "content": content })
        })
        .collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({ "type": "text", "text": text }))
}

fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Object(Map::new()),
    }
}

/// The status an error type stands for, so the retry policy applies to stream errors too.
fn status_of(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn error_event(provider: &Provider, json: &Value) -> AttemptError {
    let error_type = json
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = sse::json_error_message(json).unwrap_or_else(|| json.to_string());
    AttemptError::status(provider, status_of(error_type), message, None)
}

/// The reply being read, with the content blocks' indexes mapped to tool calls.
#[derive(Default)]
struct Reader {
    assembly: Assembly,
    /// A tool_use block's `input` from its start event: used when no `input_json_delta`
    /// follows (the JSON-body form, or a server that sends the input whole).
    initial_inputs: Vec<Value>,
}

impl Reader {
    async fn read_stream(
        &mut self,
        provider: &Provider,
        mut events: Events,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), AttemptError> {
        while let Some(event) = events.next(provider).await? {
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            let json: Value = serde_json::from_str(data).map_err(|error| {
                AttemptError::protocol(provider, format!("a stream event does not parse: {error}"))
            })?;
            // The `type` field names the event; the SSE `event:` line repeats it.
            let kind = json
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(event.event.as_str());
            match kind {
                "content_block_start" => {
                    let index = json.get("index").and_then(Value::as_u64);
                    self.start_block(index, json.get("content_block"), on_text);
                }
                "content_block_delta" => {
                    let index = json.get("index").and_then(Value::as_u64);
                    self.delta(index, json.get("delta"), on_text);
                }
                "message_start" => self.note_usage(json.pointer("/message/usage")),
                "message_delta" => {
                    if let Some(reason) = json.pointer("/delta/stop_reason").and_then(Value::as_str)
                    {
                        self.assembly.finish_reason = Some(reason.to_owned());
                    }
                    self.note_usage(json.get("usage"));
                }
                "message_stop" => {
                    self.assembly.terminated = true;
                    return Ok(());
                }
                "error" => return Err(error_event(provider, &json)),
                // message_start, content_block_stop, ping, and whatever comes next.
                _ => {}
            }
        }
        Ok(())
    }

    /// A server that ignored `stream: true`: one `message` document.
    fn read_whole(
        &mut self,
        provider: &Provider,
        json: &Value,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), AttemptError> {
        if json.get("type").and_then(Value::as_str) == Some("error") {
            return Err(error_event(provider, json));
        }
        let Some(content) = json.get("content").and_then(Value::as_array) else {
            return Err(AttemptError::protocol(
                provider,
                "the JSON reply has no content",
            ));
        };
        for (index, block) in (0u64..).zip(content) {
            self.start_block(Some(index), Some(block), on_text);
        }
        if let Some(reason) = json.get("stop_reason").and_then(Value::as_str) {
            self.assembly.finish_reason = Some(reason.to_owned());
        }
        self.note_usage(json.get("usage"));
        self.assembly.terminated = true;
        Ok(())
    }

    /// `usage` from `message_start` (input, cache reads and writes, output so far) and from
    /// `message_delta` (the output count, cumulative): the later figures win, field by field.
    fn note_usage(&mut self, usage: Option<&Value>) {
        let Some(usage) = usage.filter(|u| u.is_object()) else {
            return;
        };
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        let mut total = self.assembly.usage.unwrap_or_default();
        let (plain, read, written) = (
            field("input_tokens"),
            field("cache_read_input_tokens"),
            field("cache_creation_input_tokens"),
        );
        if plain.is_some() || read.is_some() || written.is_some() {
            // Anthropic's input_tokens excludes the cached part; ours includes it.
            let read = read.unwrap_or(0);
            total.input = plain.unwrap_or(0) + read + written.unwrap_or(0);
            total.cached = read;
        }
        if let Some(output) = field("output_tokens") {
            total.output = output;
        }
        self.assembly.usage = Some(total);
    }

    fn start_block(
        &mut self,
        index: Option<u64>,
        block: Option<&Value>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) {
        let Some(block) = block else { return };
        let field = |name: &str| {
            block
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => self.assembly.push_text(&field("text"), on_text),
            Some("tool_use") => {
                self.assembly.calls.push(PartialCall {
                    key: index,
                    id: field("id"),
                    name: field("name"),
                    arguments: String::new(),
                });
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                self.initial_inputs.push(input);
            }
            _ => {}
        }
    }

    fn delta(
        &mut self,
        index: Option<u64>,
        delta: Option<&Value>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) {
        let Some(delta) = delta else { return };
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                self.assembly.push_text(text, on_text);
            }
            Some("input_json_delta") => {
                let fragment = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(call) = self
                    .assembly
                    .calls
                    .iter_mut()
                    .rfind(|call| call.key == index)
                {
                    call.arguments.push_str(fragment);
                }
            }
            _ => {}
        }
    }

    fn finish(mut self, provider: &Provider) -> Result<ModelReply, AttemptError> {
        for (call, input) in self.assembly.calls.iter_mut().zip(&self.initial_inputs) {
            if call.arguments.trim().is_empty()
                && let Some(object) = input.as_object().filter(|object| !object.is_empty())
            {
                call.arguments = Value::Object(object.clone()).to_string();
            }
        }
        self.assembly.finish(provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ToolCall;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "ls".into(),
            arguments: arguments.into(),
        }
    }

    fn result(id: &str) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "ls".into(),
            content: format!("out {id}"),
            is_error: id == "b",
        }
    }

    #[test]
    fn results_and_following_text_merge_into_one_user_message() {
        let conversation = vec![
            Message::User { text: "go".into() },
            Message::Assistant {
                text: "  ".into(),
                tool_calls: vec![call("a", r#"{"p":1}"#), call("b", "not json")],
            },
            result("a"),
            result("b"),
            Message::User {
                text: "and then?".into(),
            },
            Message::Assistant {
                text: "done".into(),
                tool_calls: vec![],
            },
        ];
        let sent = messages(&conversation);
        let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
        let assistant = sent[1]["content"].as_array().unwrap();
        assert_eq!(assistant.len(), 2, "the blank text is left out");
        assert_eq!(assistant[0]["input"], json!({"p": 1}));
        assert_eq!(assistant[1]["input"], json!({}));
        let user = sent[2]["content"].as_array().unwrap();
        let kinds: Vec<&str> = user.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
        assert_eq!(user[1]["is_error"], true);
    }

    #[test]
    fn tool_results_go_before_text_in_a_merged_user_message() {
        let conversation = vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![call("a", "{}")],
            },
            Message::User {
                text: "interjection".into(),
            },
            result("a"),
        ];
        let sent = messages(&conversation);
        assert_eq!(sent[1]["content"][0]["type"], "tool_result");
        assert_eq!(sent[1]["content"][1]["type"], "text");
    }
}
