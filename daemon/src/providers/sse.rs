//! HTTP plumbing shared by both wire formats: send one request, turn an error status into an
//! [`AttemptError`] carrying the server's own message, and hand back the body either as SSE
//! events (read as they arrive) or as one JSON document (a server that ignored `stream: true`).
//!
//! Nothing here knows either wire format's event shapes; `openai.rs` and `anthropic.rs` do.

use std::pin::Pin;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::RequestBuilder;
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

use super::Provider;
use super::attempt::{AttemptError, retry_after};

/// Error bodies can be whole HTML pages; the message keeps their start.
const MAX_MESSAGE_CHARS: usize = 2000;

/// A successful response's body.
pub(super) enum Body {
    /// `text/event-stream` (or anything that is not JSON): events as they arrive.
    Events(Events),
    /// `application/json`: one whole completion.
    Json(Value),
}

type EventResult = Result<Event, EventStreamError<reqwest::Error>>;

/// The SSE events of one response. Dropping it closes the connection.
pub(super) struct Events {
    inner: Pin<Box<dyn Stream<Item = EventResult> + Send>>,
}

impl Events {
    /// The next event, `None` at the end of the body. A body that breaks off mid-way (reset,
    /// truncated chunked encoding, timeout) is a retryable transport error.
    pub async fn next(&mut self, provider: &Provider) -> Result<Option<Event>, AttemptError> {
        match self.inner.next().await {
            None => Ok(None),
            Some(Ok(event)) => Ok(Some(event)),
            Some(Err(EventStreamError::Transport(error))) => {
                Err(AttemptError::broken_stream(provider, &error))
            }
            Some(Err(error)) => Err(AttemptError::protocol(
                provider,
                format!("unreadable event stream: {error}"),
            )),
        }
    }
}

/// Sends `body` as JSON and classifies the answer. Error statuses become [`AttemptError`]s
/// whose message is the server's (its JSON error message, else its text).
pub(super) async fn send(
    provider: &Provider,
    request: RequestBuilder,
    body: &Value,
) -> Result<Body, AttemptError> {
    let response = request
        .json(body)
        .send()
        .await
        .map_err(|error| AttemptError::transport(provider, &error))?;
    let status = response.status();
    if !status.is_success() {
        let after = retry_after(response.headers());
        // A body that cannot be read still leaves the status to report.
        let text = response.text().await.unwrap_or_default();
        let message = error_message(&text, status.as_u16());
        return Err(AttemptError::status(
            provider,
            status.as_u16(),
            message,
            after,
        ));
    }
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if is_json {
        let bytes = response
            .bytes()
            .await
            .map_err(|error| AttemptError::transport(provider, &error))?;
        let json = serde_json::from_slice(&bytes).map_err(|error| {
            AttemptError::protocol(provider, format!("the JSON body does not parse: {error}"))
        })?;
        return Ok(Body::Json(json));
    }
    Ok(Body::Events(Events {
        inner: Box::pin(response.bytes_stream().eventsource()),
    }))
}

/// The message to show for an error body: the JSON error's message when there is one, else
/// the (trimmed, shortened) text, else the status's reason phrase.
pub(super) fn error_message(body: &str, status: u16) -> String {
    let text = body.trim();
    if let Ok(json) = serde_json::from_str::<Value>(text)
        && let Some(message) = json_error_message(&json)
    {
        return shorten(&message);
    }
    if text.is_empty() {
        return reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("no message")
            .to_owned();
    }
    shorten(text)
}

/// The message of a JSON error document, in the shapes servers use:
/// `{"error":{"message":..}}` (OpenAI, Anthropic, vLLM), `{"error":".."}` (Ollama),
/// `{"message":".."}` and `{"detail":".."}` (assorted proxies).
pub(super) fn json_error_message(json: &Value) -> Option<String> {
    let error = json.get("error");
    let candidates = [
        error.and_then(|error| error.get("message")),
        error,
        json.get("message"),
        json.get("detail"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|value| match value {
            Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
            _ => None,
        })
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_in_every_shape() {
        let openai = r#"{"error":{"message":"context too long","type":"invalid_request_error"}}"#;
        assert_eq!(error_message(openai, 400), "context too long");
        let anthropic = r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#;
        assert_eq!(error_message(anthropic, 529), "busy");
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#, 404),
            "model not found"
        );
        assert_eq!(error_message(r#"{"detail":"nope"}"#, 422), "nope");
        assert_eq!(
            error_message("  upstream exploded\n", 500),
            "upstream exploded"
        );
        assert_eq!(error_message("", 502), "Bad Gateway");
        assert_eq!(
            error_message(r#"{"unrelated":1}"#, 500),
            r#"{"unrelated":1}"#
        );
        let long = "é".repeat(5000);
        assert_eq!(
            error_message(&long, 500).chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }
}
