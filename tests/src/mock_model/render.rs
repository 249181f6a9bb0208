//! Rendering a [`Reply`] in the wire format its request came in: SSE frames for streams,
//! one JSON document for `non_streaming`, and error bodies (plain text or the format's JSON).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use futures_util::{StreamExt, stream};
use serde_json::{Value, json};

use super::{CapturedRequest, MockCall, Reply, ReplyBody, Wire};

pub(super) fn error_response(
    wire: Wire,
    status: u16,
    message: &str,
    json: bool,
    retry_after: Option<u64>,
) -> Response {
    let (content_type, body) = match (json, wire) {
        (false, _) => ("text/plain; charset=utf-8", message.to_owned()),
        (true, Wire::OpenAi) => (
            "application/json",
            json!({"error": {"message": message, "type": "invalid_request_error", "code": null}}).to_string(),
        ),
        (true, Wire::Anthropic) => (
            "application/json",
            json!({"type": "error", "error": {"type": anthropic_error_type(status), "message": message}}).to_string(),
        ),
    };
    let mut response = Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header(header::CONTENT_TYPE, content_type);
    if let Some(secs) = retry_after {
        response = response.header(header::RETRY_AFTER, secs.to_string());
    }
    response.body(Body::from(body)).unwrap()
}

fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

pub(super) fn render(reply: &Reply, request: &CapturedRequest) -> Response {
    let wire = request.wire;
    let (text, calls) = match &reply.body {
        ReplyBody::Error {
            status,
            message,
            json,
        } => {
            return error_response(wire, *status, message, *json, reply.retry_after);
        }
        ReplyBody::StreamError { message } => {
            return stream_response(reply, stream_error_frames(wire, &request.model, message));
        }
        ReplyBody::Answer { text, calls } => (text.as_str(), calls.as_slice()),
    };
    let usage = match reply.usage {
        Some(usage) => usage,
        None => Some((
            (request.body.to_string().len() / 4) as u64,
            0,
            ((text.len() + calls.iter().map(|c| c.arguments.len()).sum::<usize>()) / 4 + 1) as u64,
        )),
    };
    if reply.non_streaming || !request.stream {
        let mut body = match wire {
            Wire::OpenAi => openai_whole(text, calls, &request.model),
            Wire::Anthropic => anthropic_whole(text, calls, &request.model),
        };
        match (wire, usage) {
            (_, None) => {
                body.as_object_mut().unwrap().remove("usage");
            }
            (Wire::OpenAi, Some(u)) => body["usage"] = openai_usage(u),
            (Wire::Anthropic, Some(u)) => body["usage"] = anthropic_usage(u),
        }
        return Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
    }
    let frames = match wire {
        Wire::OpenAi => openai_frames(reply, text, calls, &request.model, usage),
        Wire::Anthropic => anthropic_frames(reply, text, calls, &request.model, usage),
    };
    stream_response(reply, frames)
}

fn stream_response(reply: &Reply, mut frames: Vec<String>) -> Response {
    let delay = reply.delta_delay;
    if reply.cut_off {
        frames.truncate((frames.len() / 2).max(1));
    }
    let frames = stream::iter(frames.into_iter().enumerate()).then(move |(i, frame)| async move {
        if i > 0 && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Ok::<_, std::io::Error>(Bytes::from(frame))
    });
    // An error from the body stream makes hyper drop the connection without ending the
    // chunked body: the client sees the stream break, not end. The pause first lets hyper
    // flush the head and the frames before it, so the break comes mid-stream.
    let cut = stream::iter(reply.cut_off.then_some(())).then(|()| async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Err(std::io::Error::other("mock: cut off"))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(frames.chain(cut)))
        .unwrap()
}

/// Text as several deltas: one per word, or two halves of a single word.
fn text_pieces(text: &str) -> Vec<String> {
    let words: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
    if words.len() > 1 {
        words
    } else {
        split_in(text, 2)
    }
}

/// `text` in up to `n` non-empty pieces, cut at char boundaries.
fn split_in(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n).max(1);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

fn finish_reason(wire: Wire, calls: &[MockCall]) -> &'static str {
    match (wire, calls.is_empty()) {
        (Wire::OpenAi, true) => "stop",
        (Wire::OpenAi, false) => "tool_calls",
        (Wire::Anthropic, true) => "end_turn",
        (Wire::Anthropic, false) => "tool_use",
    }
}

type Usage = Option<(u64, u64, u64)>;

fn openai_usage((input, cached, output): (u64, u64, u64)) -> Value {
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": cached}})
}

fn anthropic_usage((input, cached, output): (u64, u64, u64)) -> Value {
    json!({"input_tokens": input - cached, "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0, "output_tokens": output})
}

fn openai_frames(
    reply: &Reply,
    text: &str,
    calls: &[MockCall],
    model: &str,
    usage: Usage,
) -> Vec<String> {
    let nulls = reply.explicit_nulls;
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut choice = json!({"index": 0, "delta": delta});
        if finish.is_some() || nulls {
            choice["finish_reason"] = json!(finish);
        }
        if nulls {
            choice["logprobs"] = Value::Null;
        }
        let chunk = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [choice]});
        format!("data: {chunk}\n\n")
    };
    let mut frames = Vec::new();
    frames.push(chunk(
        if nulls {
            json!({"role": "assistant", "content": null, "tool_calls": null, "refusal": null})
        } else {
            json!({"role": "assistant", "content": ""})
        },
        None,
    ));
    if nulls {
        frames.push(format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-mock", "choices": [{"index": 0, "finish_reason": null}]})
        ));
    }
    for piece in text_pieces(text).iter().filter(|p| !p.is_empty()) {
        let delta = if nulls {
            json!({"content": piece, "tool_calls": null})
        } else {
            json!({"content": piece})
        };
        frames.push(chunk(delta, None));
    }
    for (index, call) in calls.iter().enumerate() {
        let head = json!({"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}});
        frames.push(chunk(
            json!({"content": if nulls { Value::Null } else { json!("") }, "tool_calls": [head]}),
            None,
        ));
        for fragment in split_in(&call.arguments, 3) {
            let mut part = json!({"index": index, "function": {"arguments": fragment}});
            if reply.repeat_id_and_name {
                part["id"] = json!(call.id);
                part["type"] = json!("function");
                part["function"]["name"] = json!(call.name);
            } else if nulls {
                part["id"] = Value::Null;
                part["function"]["name"] = Value::Null;
            }
            let delta = if nulls {
                json!({"content": null, "tool_calls": [part]})
            } else {
                json!({"tool_calls": [part]})
            };
            frames.push(chunk(delta, None));
        }
    }
    let last = if nulls {
        json!({"content": null})
    } else {
        json!({})
    };
    frames.push(chunk(last, Some(finish_reason(Wire::OpenAi, calls))));
    // The usage-only chunk servers send with `stream_options.include_usage`.
    if let Some(usage) = usage {
        let usage = json!({"id": "chatcmpl-mock", "choices": [], "usage": openai_usage(usage)});
        frames.push(format!("data: {usage}\n\n"));
    }
    if !reply.no_terminator {
        frames.push("data: [DONE]\n\n".to_owned());
    }
    frames
}

fn anthropic_event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or("message")
    )
}

fn anthropic_start(model: &str, usage: Usage) -> String {
    let mut message = json!({
        "id": "msg_mock", "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": null, "stop_sequence": null});
    if let Some(usage) = usage {
        let mut start = anthropic_usage(usage);
        start["output_tokens"] = json!(1);
        message["usage"] = start;
    }
    anthropic_event(json!({"type": "message_start", "message": message}))
}

fn anthropic_frames(
    reply: &Reply,
    text: &str,
    calls: &[MockCall],
    model: &str,
    usage: Usage,
) -> Vec<String> {
    let mut frames = vec![
        anthropic_start(model, usage),
        anthropic_event(json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !text.is_empty() {
        frames.push(anthropic_event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for piece in text_pieces(text) {
            frames.push(anthropic_event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})));
        }
        frames.push(anthropic_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in calls {
        frames.push(anthropic_event(
            json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        ));
        for fragment in split_in(&call.arguments, 3) {
            frames.push(anthropic_event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}})));
        }
        frames.push(anthropic_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let mut delta = json!({"type": "message_delta",
        "delta": {"stop_reason": finish_reason(Wire::Anthropic, calls), "stop_sequence": null}});
    if let Some((_, _, output)) = usage {
        delta["usage"] = json!({"output_tokens": output});
    }
    frames.push(anthropic_event(delta));
    if !reply.no_terminator {
        frames.push(anthropic_event(json!({"type": "message_stop"})));
    }
    frames
}

fn stream_error_frames(wire: Wire, model: &str, message: &str) -> Vec<String> {
    match wire {
        Wire::OpenAi => vec![format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": "server_error"}})
        )],
        Wire::Anthropic => vec![
            anthropic_start(model, None),
            anthropic_event(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
            ),
        ],
    }
}

fn openai_whole(text: &str, calls: &[MockCall], model: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        message["tool_calls"] = json!(calls);
    }
    json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(Wire::OpenAi, calls)}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
}

fn anthropic_whole(text: &str, calls: &[MockCall], model: &str) -> Value {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in calls {
        let input = serde_json::from_str::<Value>(&call.arguments).unwrap_or_else(|_| json!({}));
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": finish_reason(Wire::Anthropic, calls), "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1}})
}
