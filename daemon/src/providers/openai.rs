//! OpenAI-compatible Chat Completions: `POST {base_url}/chat/completions` with `stream: true`.
//!
//! Spoken by OpenAI, xAI, Ollama, vLLM, llama.cpp and OpenRouter, each with its quirks, so the
//! reader is lenient and the writer is strict:
//!
//! - Sent: an assistant message's `content` is always a string (`""` beside tool calls), never
//!   `null`, which strict servers reject; stored arguments that are not JSON are sent as `{}`
//!   (servers that parse them, Ollama and llama.cpp, would reject the whole request; the
//!   call's result already tells the model what was wrong). `is_error` has no field in this
//!   format: the result's text must say it.
//! - Read: any field may be missing or `null`; chunks with `choices: []` (usage) are skipped;
//!   tool-call fragments are joined by `index`, taking the id and name from the first chunk
//!   that has them (some servers repeat both in every chunk) and concatenating only the
//!   arguments; arguments sent as an object instead of a string are accepted; an `error`
//!   object in the stream is an error; a JSON body instead of a stream is a whole completion.
//!   A stream without `[DONE]` follows the rule in `assemble.rs`.

use serde_json::{Value, json};

use super::assemble::{Assembly, PartialCall};
use super::attempt::AttemptError;
use super::sse::{self, Body, Events};
use super::{Message, ModelReply, ModelRequest, Provider, TokenUsage};

/// One attempt: send, then read the stream (or the JSON body) into a reply.
pub(super) async fn complete_once(
    provider: &Provider,
    request: &ModelRequest,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ModelReply, AttemptError> {
    let config = &provider.config;
    let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
    let mut http = provider.http.post(url);
    if let Some(key) = &config.api_key {
        // reqwest marks this header sensitive, so it never shows in Debug output.
        http = http.bearer_auth(key);
    }
    let body = request_body(&config.model, request);
    let mut assembly = Assembly::default();
    match sse::send(provider, http, &body).await? {
        Body::Json(json) => read_whole(provider, &json, &mut assembly, on_text)?,
        Body::Events(events) => read_stream(provider, events, &mut assembly, on_text).await?,
    }
    assembly.finish(provider)
}

/// The request body (pure, for tests).
fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({ "role": "system", "content": request.system }));
    }
    // Tool messages carry text only: their images follow the run of results, in one user
    // message (a user message between two results would break the sequence).
    let mut images: Vec<Value> = Vec::new();
    for message in &request.messages {
        if let Message::Image {
            call_id,
            media_type,
            data,
            ..
        } = message
        {
            if let Some(data) = data {
                images.push(json!({"type": "text", "text": format!("[image from {call_id}]")}));
                images.push(json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}}));
            }
            continue;
        }
        if !images.is_empty() && !matches!(message, Message::ToolResult { .. }) {
            let content = std::mem::take(&mut images);
            messages.push(json!({ "role": "user", "content": content }));
        }
        messages.push(match message {
            Message::User { text } => json!({ "role": "user", "content": text }),
            Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                json!({ "role": "assistant", "content": text })
            }
            Message::Assistant { text, tool_calls } => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": { "name": call.name, "arguments": sendable_arguments(&call.arguments) },
                        })
                    })
                    .collect();
                json!({ "role": "assistant", "content": text, "tool_calls": calls })
            }
            Message::ToolResult {
                call_id, content, ..
            } => json!({ "role": "tool", "tool_call_id": call_id, "content": content }),
            Message::Image { .. } => continue,
        });
    }
    if !images.is_empty() {
        messages.push(json!({ "role": "user", "content": images }));
    }
    // `include_usage`: the last chunk carries the request's token counts.
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Stored arguments as they may be sent back (see the module doc).
fn sendable_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(_) => arguments.to_owned(),
        Err(_) => "{}".to_owned(),
    }
}

async fn read_stream(
    provider: &Provider,
    mut events: Events,
    assembly: &mut Assembly,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<(), AttemptError> {
    while let Some(event) = events.next(provider).await? {
        let data = event.data.trim();
        if data == "[DONE]" {
            assembly.terminated = true;
            return Ok(());
        }
        if data.is_empty() {
            continue;
        }
        let chunk: Value = serde_json::from_str(data).map_err(|error| {
            AttemptError::protocol(provider, format!("a stream chunk does not parse: {error}"))
        })?;
        if let Some(error) = in_body_error(provider, &chunk) {
            return Err(error);
        }
        if let Some(usage) = usage_of(&chunk) {
            assembly.usage = Some(usage);
        }
        let Some(choice) = first_choice(&chunk) else {
            continue; // usage-only chunk
        };
        note_finish(assembly, choice);
        // `delta` per the spec; a few servers send `message` in their last chunk.
        let delta = choice
            .get("delta")
            .filter(|delta| delta.is_object())
            .or_else(|| choice.get("message"));
        if let Some(delta) = delta {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                assembly.push_text(text, on_text);
            }
            for fragment in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                merge_fragment(&mut assembly.calls, fragment);
            }
        }
    }
    Ok(())
}

/// A server that ignored `stream: true`: one `chat.completion` document.
fn read_whole(
    provider: &Provider,
    json: &Value,
    assembly: &mut Assembly,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<(), AttemptError> {
    if let Some(error) = in_body_error(provider, json) {
        return Err(error);
    }
    let Some(choice) = first_choice(json) else {
        return Err(AttemptError::protocol(
            provider,
            "the JSON reply has no choices",
        ));
    };
    note_finish(assembly, choice);
    assembly.terminated = true;
    assembly.usage = usage_of(json);
    let message = choice.get("message");
    if let Some(text) = message
        .and_then(|message| message.get("content"))
        .and_then(Value::as_str)
    {
        assembly.push_text(text, on_text);
    }
    for call in message
        .and_then(|message| message.get("tool_calls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        assembly.calls.push(PartialCall::default());
        merge_into(&mut assembly.calls, None, call);
    }
    Ok(())
}

/// `usage: {prompt_tokens, completion_tokens, prompt_tokens_details: {cached_tokens}}`.
fn usage_of(chunk: &Value) -> Option<TokenUsage> {
    let usage = chunk.get("usage").filter(|u| u.is_object())?;
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Some(TokenUsage {
        input: count("/prompt_tokens"),
        cached: count("/prompt_tokens_details/cached_tokens"),
        output: count("/completion_tokens"),
    })
}

fn first_choice(chunk: &Value) -> Option<&Value> {
    chunk.get("choices")?.as_array()?.first()
}

fn note_finish(assembly: &mut Assembly, choice: &Value) {
    if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
        && !reason.is_empty()
    {
        assembly.finish_reason = Some(reason.to_owned());
    }
}

/// An `error` object in a 200 body or stream (OpenRouter, vLLM do this). Its numeric `code`
/// is taken as the status when it is one; otherwise it counts as a (retryable) server error.
fn in_body_error(provider: &Provider, json: &Value) -> Option<AttemptError> {
    let error = json.get("error").filter(|error| !error.is_null())?;
    let status = ["code", "status"]
        .iter()
        .find_map(|key| error.get(*key).and_then(Value::as_u64))
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code))
        .unwrap_or(500);
    let message = sse::json_error_message(json).unwrap_or_else(|| error.to_string());
    Some(AttemptError::status(provider, status, message, None))
}

/// Adds one streamed tool-call fragment to the call it belongs to.
fn merge_fragment(calls: &mut Vec<PartialCall>, fragment: &Value) {
    let id = fragment.get("id").and_then(Value::as_str).unwrap_or("");
    let slot = match fragment.get("index").and_then(Value::as_u64) {
        // A new id under a used index: servers that number every call 0.
        Some(index) => calls
            .iter()
            .rposition(|call| call.key == Some(index))
            .filter(|&at| id.is_empty() || calls[at].id.is_empty() || calls[at].id == id),
        // No index at all: an unseen id starts a call; anything else continues the last one.
        None if !id.is_empty() => calls.iter().rposition(|call| call.id == id),
        None => calls.len().checked_sub(1),
    };
    if slot.is_none() {
        calls.push(PartialCall {
            key: fragment.get("index").and_then(Value::as_u64),
            ..PartialCall::default()
        });
    }
    merge_into(calls, slot, fragment);
}

/// Merges `fragment` into `calls[slot]` (the last call when `slot` is `None`): the id and name
/// only when still unknown, the arguments always appended.
fn merge_into(calls: &mut [PartialCall], slot: Option<usize>, fragment: &Value) {
    let Some(call) = (match slot {
        Some(at) => calls.get_mut(at),
        None => calls.last_mut(),
    }) else {
        return;
    };
    let function = fragment.get("function");
    if call.id.is_empty()
        && let Some(id) = fragment.get("id").and_then(Value::as_str)
    {
        call.id = id.to_owned();
    }
    if call.name.is_empty()
        && let Some(name) = function
            .and_then(|function| function.get("name"))
            .and_then(Value::as_str)
    {
        call.name = name.to_owned();
    }
    match function.and_then(|function| function.get("arguments")) {
        Some(Value::String(fragment)) => call.arguments.push_str(fragment),
        Some(object @ Value::Object(_)) => call.arguments.push_str(&object.to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{ToolCall, ToolDef};

    #[test]
    fn body_never_sends_null_content_and_sanitises_arguments() {
        let request = ModelRequest {
            system: "be brief".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "a".into(),
                            name: "ls".into(),
                            arguments: r#"{"path":"."}"#.into(),
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "ls".into(),
                            arguments: "{not json".into(),
                        },
                    ],
                },
                Message::ToolResult {
                    call_id: "a".into(),
                    name: "ls".into(),
                    content: "x".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolDef {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let body = request_body("m", &request);
        assert_eq!(body["messages"][0]["role"], "system");
        let assistant = &body["messages"][2];
        assert_eq!(assistant["content"], "");
        assert_eq!(
            assistant["tool_calls"][0]["function"]["arguments"],
            r#"{"path":"."}"#
        );
        assert_eq!(assistant["tool_calls"][1]["function"]["arguments"], "{}");
        assert_eq!(body["messages"][3]["tool_call_id"], "a");
        assert_eq!(body["tools"][0]["function"]["name"], "ls");
        assert_eq!(body["stream"], true);
    }

    #[test]
    fn fragments_join_by_index_without_doubling_ids_or_names() {
        let mut calls = Vec::new();
        let chunks = [
            json!({"index": 0, "id": "c1", "type": "function", "function": {"name": "read", "arguments": ""}}),
            json!({"index": 1, "id": "c2", "function": {"name": "write", "arguments": "{\"a\""}}),
            json!({"index": 0, "id": "c1", "function": {"name": "read", "arguments": "{\"p\":"}}),
            json!({"index": 0, "id": null, "function": {"name": null, "arguments": "1}"}}),
            json!({"index": 1, "function": {"arguments": ":2}"}}),
        ];
        for chunk in &chunks {
            merge_fragment(&mut calls, chunk);
        }
        let got: Vec<_> = calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            got,
            [("c1", "read", "{\"p\":1}"), ("c2", "write", "{\"a\":2}")]
        );
    }

    #[test]
    fn every_call_at_index_zero_still_splits_by_id() {
        let mut calls = Vec::new();
        for chunk in [
            json!({"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}}),
            json!({"index": 0, "id": "b", "function": {"name": "y", "arguments": "{}"}}),
        ] {
            merge_fragment(&mut calls, &chunk);
        }
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].name, "y");
    }
}
