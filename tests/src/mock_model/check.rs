//! Reading a captured request: the normalized view ([`SeenMessage`]s, the same for both
//! formats) and the invariants every request must keep. Findings are returned as strings;
//! the server collects them and never panics.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{CapturedRequest, MockCall, SeenImage, SeenMessage};

/// Text of an OpenAI `content` (string, parts array or null) or an Anthropic block list.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

pub(super) fn normalize_openai(request: &mut CapturedRequest) -> Vec<String> {
    let mut found = Vec::new();
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for message in &messages {
        let content = text_of(&message["content"]);
        if let Some(parts) = message["content"].as_array() {
            let mut named = None;
            for part in parts {
                if let Some(text) = part["text"].as_str() {
                    named = text
                        .strip_prefix("[image from ")
                        .and_then(|t| t.strip_suffix(']'))
                        .map(str::to_owned);
                }
                let url = part["image_url"]["url"].as_str().unwrap_or("");
                if let Some((media, data)) = url
                    .strip_prefix("data:")
                    .and_then(|u| u.split_once(";base64,"))
                {
                    request.images.push(SeenImage {
                        call_id: named.take(),
                        media_type: media.to_owned(),
                        base64: data.to_owned(),
                    });
                }
            }
        }
        match message["role"].as_str().unwrap_or("") {
            "system" | "developer" => request.system.push_str(&content),
            "user" => request.messages.push(SeenMessage::User { text: content }),
            "assistant" => {
                let calls = message["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if !calls.is_empty() && !message["content"].is_string() {
                    found
                        .push("assistant message with tool_calls: content must be a string".into());
                }
                let tool_calls = calls
                    .iter()
                    .map(|call| MockCall {
                        id: call["id"].as_str().unwrap_or("").to_owned(),
                        name: call["function"]["name"].as_str().unwrap_or("").to_owned(),
                        arguments: call["function"]["arguments"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned(),
                    })
                    .collect();
                request.messages.push(SeenMessage::Assistant {
                    text: content,
                    tool_calls,
                });
            }
            "tool" => request.messages.push(SeenMessage::ToolResult {
                call_id: message["tool_call_id"].as_str().unwrap_or("").to_owned(),
                content,
                is_error: false,
            }),
            other => found.push(format!("unknown role {other:?}")),
        }
    }
    let tools = request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    request.tools = tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    // Strict servers want tool messages right after the assistant message that called.
    let mut previous: Option<&Value> = None;
    for message in &messages {
        if message["role"] == "tool" {
            let follows =
                previous.is_some_and(|p| p["role"] == "tool" || p["tool_calls"].is_array());
            if !follows {
                found.push(format!(
                    "tool message {} does not follow the assistant's tool_calls",
                    message["tool_call_id"]
                ));
            }
        }
        previous = Some(message);
    }
    found
}

pub(super) fn normalize_anthropic(request: &mut CapturedRequest) -> Vec<String> {
    let mut found = Vec::new();
    request.system = text_of(&request.body["system"]);
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut previous_role = "";
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if (i == 0 && role != "user") || role == previous_role {
            found.push(format!(
                "message {i}: roles must alternate, starting with user (got {role})"
            ));
        }
        previous_role = role;
        let blocks = match &message["content"] {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        let mut text_seen = false;
        let mut assistant_text = String::new();
        let mut tool_calls = Vec::new();
        for block in &blocks {
            match (role, block["type"].as_str().unwrap_or("")) {
                (_, "text") if block["text"].as_str().is_none_or(|t| t.trim().is_empty()) => {
                    found.push(format!("message {i}: a text block is blank"));
                }
                ("user", "text") => {
                    text_seen = true;
                    request.messages.push(SeenMessage::User {
                        text: text_of(&json!([block])),
                    });
                }
                ("user", "tool_result") => {
                    if text_seen {
                        found.push(format!(
                            "message {i}: tool_result blocks must come before text"
                        ));
                    }
                    request.messages.push(SeenMessage::ToolResult {
                        call_id: block["tool_use_id"].as_str().unwrap_or("").to_owned(),
                        content: text_of(&block["content"]),
                        is_error: block["is_error"] == true,
                    });
                    for inner in block["content"].as_array().into_iter().flatten() {
                        if inner["type"] == "image" {
                            request.images.push(SeenImage {
                                call_id: block["tool_use_id"].as_str().map(str::to_owned),
                                media_type: inner["source"]["media_type"]
                                    .as_str()
                                    .unwrap_or("")
                                    .to_owned(),
                                base64: inner["source"]["data"].as_str().unwrap_or("").to_owned(),
                            });
                        } else if inner["type"] != "text" {
                            found.push(format!(
                                "message {i}: unexpected {} block in a tool_result",
                                inner["type"]
                            ));
                        }
                    }
                }
                ("assistant", "text") => {
                    assistant_text.push_str(block["text"].as_str().unwrap_or(""))
                }
                ("assistant", "tool_use") => {
                    if !block["input"].is_object() {
                        found.push(format!("message {i}: tool_use input must be an object"));
                    }
                    tool_calls.push(MockCall {
                        id: block["id"].as_str().unwrap_or("").to_owned(),
                        name: block["name"].as_str().unwrap_or("").to_owned(),
                        arguments: block["input"].to_string(),
                    });
                }
                (role, kind) => found.push(format!(
                    "message {i}: unexpected {kind:?} block for {role:?}"
                )),
            }
        }
        if role == "assistant" {
            request.messages.push(SeenMessage::Assistant {
                text: assistant_text,
                tool_calls,
            });
        }
    }
    let tools = request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    request.tools = tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    found
}

/// The format-independent invariants: a system prompt; every result answers a call of the
/// assistant message before it; call ids unique; every call answered exactly once before the
/// next assistant message (calls in a conversation's final message may still be open).
pub(super) fn conversation_violations(request: &CapturedRequest) -> Vec<String> {
    let mut found = Vec::new();
    if request.system.trim().is_empty() {
        found.push("the system prompt is missing or empty".to_owned());
    }
    let mut ids = HashSet::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    let close = |open: &mut Vec<(String, usize)>, found: &mut Vec<String>| {
        for (id, results) in open.drain(..).filter(|(_, n)| *n != 1) {
            found.push(format!(
                "call {id:?} has {results} results (expected exactly 1)"
            ));
        }
    };
    for message in &request.messages {
        match message {
            SeenMessage::Assistant { tool_calls, .. } => {
                close(&mut open, &mut found);
                for call in tool_calls {
                    if !ids.insert(call.id.clone()) {
                        found.push(format!("duplicate call id {:?}", call.id));
                    }
                    open.push((call.id.clone(), 0));
                }
            }
            SeenMessage::ToolResult { call_id, .. } => {
                match open.iter_mut().find(|(id, _)| id == call_id) {
                    Some((_, results)) => *results += 1,
                    None if ids.contains(call_id) => {
                        found.push(format!(
                            "the result of {call_id:?} comes after a later assistant message"
                        ));
                    }
                    None => found.push(format!("tool result {call_id:?} answers no earlier call")),
                }
            }
            SeenMessage::User { .. } => {}
        }
    }
    let ends_with_calls = matches!(request.messages.last(), Some(SeenMessage::Assistant { .. }));
    if !ends_with_calls {
        close(&mut open, &mut found);
    }
    found
}
