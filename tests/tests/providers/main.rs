//! The production providers (`lazyboyd::providers::Provider`) against the scripted
//! `MockModel` over real HTTP, in both wire formats: streaming, tool-call assembly, server
//! quirks, the retry policy, request shapes, and cancellation.

use std::time::{Duration, Instant};

use lazyboy_tests::mock_model::{MockCall, MockModel, NO_SCRIPT_LEFT, Reply, SeenMessage};
use lazyboyd::providers::{
    Message, ModelReply, ModelRequest, Provider, ProviderConfig, ProviderError, RetryPolicy,
    ToolCall, ToolDef, WireFormat,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod conversation;
mod failures;

const BOTH: [WireFormat; 2] = [WireFormat::Openai, WireFormat::Anthropic];
const KEY: &str = "sk-test-secret";

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(50),
        empty_reply_retries: 3,
    }
}

fn provider_with(mock: &MockModel, wire: WireFormat, retry: RetryPolicy) -> Provider {
    let base_url = match wire {
        WireFormat::Openai => mock.openai_base_url(),
        WireFormat::Anthropic => mock.anthropic_base_url(),
    };
    Provider::new(ProviderConfig {
        name: "mock".into(),
        wire,
        base_url,
        api_key: Some(KEY.into()),
        model: "mock-model".into(),
        context_tokens: 128_000,
        retry,
        connect_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(30),
    })
    .unwrap()
}

fn provider(mock: &MockModel, wire: WireFormat) -> Provider {
    provider_with(mock, wire, fast_policy())
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: "You are a careful test agent.".into(),
        messages,
        tools: vec![
            ToolDef {
                name: "read_file".into(),
                description: "Reads a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolDef {
                name: "list_dir".into(),
                description: "Lists a directory.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ],
    }
}

fn hello() -> ModelRequest {
    request(vec![Message::User {
        text: "hello".into(),
    }])
}

/// A call's id, name and parsed arguments.
fn call_of(call: &ToolCall) -> (&str, &str, Value) {
    let args = serde_json::from_str(&call.arguments).unwrap();
    (call.id.as_str(), call.name.as_str(), args)
}

/// Runs one completion, collecting the text deltas.
async fn complete(
    provider: &Provider,
    request: &ModelRequest,
) -> (Result<ModelReply, ProviderError>, Vec<String>) {
    let mut deltas = Vec::new();
    let cancel = CancellationToken::new();
    let result = provider
        .complete(request, &cancel, &mut |text: &str| {
            deltas.push(text.to_owned())
        })
        .await;
    (result, deltas)
}

#[tokio::test]
async fn text_streams_in_order_with_the_right_headers() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::text("The quick brown fox jumps."));
        let (reply, deltas) = complete(&provider(&mock, wire), &hello()).await;
        let reply = reply.unwrap();
        assert!(
            deltas.len() > 1,
            "{wire:?}: one delta per word, got {deltas:?}"
        );
        assert_eq!(deltas.concat(), "The quick brown fox jumps.");
        assert_eq!(reply.text, "The quick brown fox jumps.");
        assert!(reply.tool_calls.is_empty());
        let finish = reply.finish_reason.as_deref();
        assert!(matches!(finish, Some("stop" | "end_turn")), "{finish:?}");

        let sent = mock.last_request().unwrap();
        assert!(sent.stream);
        assert_eq!(sent.model, "mock-model");
        assert_eq!(sent.system, "You are a careful test agent.");
        assert_eq!(sent.tools, ["read_file", "list_dir"]);
        assert_eq!(sent.last_user_text(), Some("hello"));
        match wire {
            WireFormat::Openai => {
                assert_eq!(sent.path, "/v1/chat/completions");
                assert_eq!(sent.authorization.as_deref(), Some("Bearer sk-test-secret"));
                assert_eq!(sent.body["tools"][0]["type"], "function");
            }
            WireFormat::Anthropic => {
                assert_eq!(sent.path, "/v1/messages");
                assert_eq!(sent.api_key.as_deref(), Some(KEY));
                assert_eq!(sent.anthropic_version.as_deref(), Some("2023-06-01"));
                assert_eq!(sent.body["max_tokens"], 8192);
                assert!(sent.body["tools"][0]["input_schema"].is_object());
            }
        }
        mock.assert_clean();
    }
}

#[tokio::test]
async fn several_tool_calls_are_assembled_from_fragments() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(
            Reply::tool_calls([
                ("c1", "read_file", json!({"path": "src/main.rs"})),
                ("c2", "list_dir", json!({"path": ".", "depth": 2})),
            ])
            .with_text("Let me look."),
        );
        let (reply, deltas) = complete(&provider(&mock, wire), &hello()).await;
        let reply = reply.unwrap();
        assert_eq!(reply.text, "Let me look.");
        assert_eq!(deltas.concat(), "Let me look.");
        let calls: Vec<_> = reply.tool_calls.iter().map(call_of).collect();
        assert_eq!(
            calls,
            [
                ("c1", "read_file", json!({"path": "src/main.rs"})),
                ("c2", "list_dir", json!({"path": ".", "depth": 2})),
            ],
            "{wire:?}"
        );
        let finish = reply.finish_reason.as_deref();
        assert!(
            matches!(finish, Some("tool_calls" | "tool_use")),
            "{finish:?}"
        );
    }
}

#[tokio::test]
async fn repeated_id_and_name_in_every_chunk_are_not_doubled() {
    let mock = MockModel::start().await;
    mock.push(
        Reply::tool_call("call_9", "read_file", json!({"path": "a.txt"})).repeat_id_and_name(),
    );
    let (reply, _) = complete(&provider(&mock, WireFormat::Openai), &hello()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(
        call_of(&reply.tool_calls[0]),
        ("call_9", "read_file", json!({"path": "a.txt"}))
    );
}

#[tokio::test]
async fn explicit_nulls_and_usage_chunks_are_tolerated() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("all fine here").explicit_nulls());
    mock.push(
        Reply::tool_call("c1", "list_dir", json!({}))
            .with_text("checking")
            .explicit_nulls(),
    );
    let provider = provider(&mock, WireFormat::Openai);
    let (reply, _) = complete(&provider, &hello()).await;
    assert_eq!(reply.unwrap().text, "all fine here");
    let (reply, _) = complete(&provider, &hello()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "checking");
    assert_eq!(call_of(&reply.tool_calls[0]), ("c1", "list_dir", json!({})));
}

#[tokio::test]
async fn a_stream_without_terminator_is_accepted_when_coherent() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::text("no done marker").no_terminator());
        mock.push(Reply::tool_call("c1", "read_file", json!({"path": "x"})).no_terminator());
        let provider = provider(&mock, wire);
        let (reply, _) = complete(&provider, &hello()).await;
        assert_eq!(reply.unwrap().text, "no done marker", "{wire:?}");
        let (reply, _) = complete(&provider, &hello()).await;
        let calls = reply.unwrap().tool_calls;
        assert_eq!(
            call_of(&calls[0]),
            ("c1", "read_file", json!({"path": "x"}))
        );
        assert_eq!(mock.request_count(), 2, "no retries");
    }
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_pass_through_raw() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        let raw = r#"{"path": "a.txt", oops"#;
        mock.push(Reply::raw_tool_call("c1", "read_file", raw));
        let (reply, _) = complete(&provider(&mock, wire), &hello()).await;
        let calls = reply.unwrap().tool_calls;
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, raw, "{wire:?}");
        assert_eq!(mock.request_count(), 1);
    }
}

#[tokio::test]
async fn a_json_body_to_a_stream_request_is_a_whole_completion() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::text("whole answer").non_streaming());
        mock.push(Reply::tool_call("c7", "read_file", json!({"path": "p"})).non_streaming());
        let provider = provider(&mock, wire);
        let (reply, deltas) = complete(&provider, &hello()).await;
        assert_eq!(reply.unwrap().text, "whole answer");
        assert_eq!(deltas, ["whole answer"], "the text is still shown");
        // OpenAI answers `"content": null` beside tool calls here.
        let (reply, _) = complete(&provider, &hello()).await;
        let reply = reply.unwrap();
        assert_eq!(reply.text, "");
        assert_eq!(
            call_of(&reply.tool_calls[0]),
            ("c7", "read_file", json!({"path": "p"}))
        );
    }
}

#[tokio::test]
async fn the_completion_future_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let mock = MockModel::start().await;
    let provider = provider(&mock, WireFormat::Openai);
    let request = hello();
    let cancel = CancellationToken::new();
    let mut ignore = |_: &str| {};
    let future = provider.complete(&request, &cancel, &mut ignore);
    assert_send(&future);
    assert_eq!(future.await.unwrap().text, NO_SCRIPT_LEFT);
}

#[tokio::test]
async fn the_api_key_never_shows_in_debug_output() {
    let mock = MockModel::start().await;
    let provider = provider(&mock, WireFormat::Anthropic);
    let debug = format!("{provider:?} {:?}", provider.config());
    assert!(!debug.contains(KEY), "{debug}");
    assert!(debug.contains("<redacted>"));
}
