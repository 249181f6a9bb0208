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
async fn a_cut_off_stream_is_retried_and_then_reported() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::text("one two three four five six").cut_off());
        mock.push(Reply::text("second try"));
        let (reply, deltas) = complete(&provider(&mock, wire), &hello()).await;
        assert_eq!(reply.unwrap().text, "second try", "{wire:?}");
        assert_eq!(mock.request_count(), 2);
        // The broken attempt's partial text was shown before the retry re-streamed.
        let shown = deltas.concat();
        assert!(
            shown.starts_with("one ") && shown.ends_with("second try"),
            "{deltas:?}"
        );
        assert!(
            !shown.contains("six"),
            "the stream was cut mid-way: {deltas:?}"
        );

        let once = RetryPolicy {
            max_attempts: 1,
            ..fast_policy()
        };
        mock.push(
            Reply::tool_call("c1", "read_file", json!({"path": "long/path/name.txt"})).cut_off(),
        );
        let (result, _) = complete(&provider_with(&mock, wire, once), &hello()).await;
        match result {
            Err(ProviderError::Transport { message, .. }) => {
                assert!(message.starts_with("the stream broke off: "), "{message}");
            }
            other => panic!("{wire:?}: expected a transport error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_plain_text_500_is_retried_then_surfaced_with_its_text() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::error(500, "upstream exploded"));
        mock.push(Reply::text("recovered"));
        let provider = provider(&mock, wire);
        let (reply, _) = complete(&provider, &hello()).await;
        assert_eq!(reply.unwrap().text, "recovered");

        for _ in 0..3 {
            mock.push(Reply::error(502, "bad gateway, try later"));
        }
        let (result, _) = complete(&provider, &hello()).await;
        match result {
            Err(ProviderError::Http {
                status: 502,
                message,
                ..
            }) => assert_eq!(message, "bad gateway, try later"),
            other => panic!("{wire:?}: {other:?}"),
        }
        assert_eq!(mock.request_count(), 2 + 3, "max_attempts is 3");
        assert_eq!(mock.pending(), 0);
    }
}

#[tokio::test]
async fn a_429_waits_for_retry_after_capped_at_max_delay() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::json_error(429, "slow down").retry_after(30));
        mock.push(Reply::text("ok"));
        let policy = RetryPolicy {
            max_delay: Duration::from_millis(150),
            ..fast_policy()
        };
        let started = Instant::now();
        let (reply, _) = complete(&provider_with(&mock, wire, policy), &hello()).await;
        let took = started.elapsed();
        assert_eq!(reply.unwrap().text, "ok");
        assert_eq!(mock.request_count(), 2);
        // Not the 5 ms backoff (Retry-After wins), not 30 s (capped at max_delay).
        assert!(took >= Duration::from_millis(150), "{wire:?}: {took:?}");
        assert!(took < Duration::from_secs(10), "{wire:?}: {took:?}");
    }
}

#[tokio::test]
async fn a_400_for_an_over_long_context_fails_at_once_with_the_servers_message() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        let message = "This model's maximum context length is 8192 tokens; you asked for 9000.";
        mock.push(Reply::json_error(400, message));
        let (result, deltas) = complete(&provider(&mock, wire), &hello()).await;
        match result {
            Err(ProviderError::Http {
                status: 400,
                message: got,
                ..
            }) => assert_eq!(got, message),
            other => panic!("{wire:?}: {other:?}"),
        }
        assert!(deltas.is_empty());
        assert_eq!(mock.request_count(), 1, "a 400 is not retried");
    }
}

#[tokio::test]
async fn other_json_errors_surface_their_message() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::json_error(401, "invalid api key"));
        let (result, _) = complete(&provider(&mock, wire), &hello()).await;
        let error = result.unwrap_err();
        assert!(
            matches!(&error, ProviderError::Http { status: 401, message, .. } if message == "invalid api key"),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "mock: HTTP 401: invalid api key");
        assert!(!error.to_string().contains(KEY));
    }
}

#[tokio::test]
async fn an_empty_reply_is_retried_three_times_then_is_empty() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::empty())
            .push(Reply::empty())
            .push(Reply::text("finally"));
        let provider = provider(&mock, wire);
        let (reply, _) = complete(&provider, &hello()).await;
        assert_eq!(reply.unwrap().text, "finally");
        assert_eq!(mock.request_count(), 3);

        mock.set_fallback(Reply::empty());
        let (result, _) = complete(&provider, &hello()).await;
        assert!(
            matches!(result, Err(ProviderError::Empty { attempts: 4, .. })),
            "{wire:?}: {result:?}"
        );
        assert_eq!(mock.request_count(), 3 + 4, "one try and three retries");
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
async fn an_error_event_mid_stream_is_retried() {
    for (wire, status) in [(WireFormat::Openai, 500), (WireFormat::Anthropic, 529)] {
        let mock = MockModel::start().await;
        mock.push(Reply::stream_error("Overloaded"));
        mock.push(Reply::text("back"));
        let provider = provider(&mock, wire);
        let (reply, _) = complete(&provider, &hello()).await;
        assert_eq!(reply.unwrap().text, "back");

        mock.set_fallback(Reply::stream_error("Overloaded"));
        let (result, _) = complete(&provider, &hello()).await;
        match result {
            Err(ProviderError::Http {
                status: got,
                message,
                ..
            }) => {
                assert_eq!((got, message.as_str()), (status, "Overloaded"), "{wire:?}");
            }
            other => panic!("{wire:?}: {other:?}"),
        }
        assert_eq!(mock.request_count(), 2 + 3);
    }
}

/// A conversation with an assistant turn of calls only, then their results.
fn after_tools() -> ModelRequest {
    request(vec![
        Message::User {
            text: "look around".into(),
        },
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![
                ToolCall {
                    id: "a".into(),
                    name: "list_dir".into(),
                    arguments: "{}".into(),
                },
                ToolCall {
                    id: "b".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path": "x", broken"#.into(),
                },
            ],
        },
        Message::ToolResult {
            call_id: "a".into(),
            name: "list_dir".into(),
            content: "x\ny".into(),
            is_error: false,
        },
        Message::ToolResult {
            call_id: "b".into(),
            name: "read_file".into(),
            content: "the arguments are not valid JSON".into(),
            is_error: true,
        },
        Message::User {
            text: "also check z".into(),
        },
    ])
}

#[tokio::test]
async fn assistant_tool_calls_are_sent_with_string_content() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("done"));
    let (reply, _) = complete(&provider(&mock, WireFormat::Openai), &after_tools()).await;
    assert_eq!(reply.unwrap().text, "done");
    let sent = mock.last_request().unwrap();
    let assistant = &sent.body["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "");
    assert_eq!(assistant["tool_calls"][0]["type"], "function");
    assert_eq!(
        assistant["tool_calls"][1]["function"]["arguments"], "{}",
        "stored arguments that are not JSON are sent as {{}}"
    );
    assert_eq!(sent.body["messages"][3]["role"], "tool");
    assert_eq!(sent.body["messages"][3]["tool_call_id"], "a");
    mock.assert_clean();
}

#[tokio::test]
async fn the_mock_rejects_null_content_beside_tool_calls() {
    let mock = MockModel::start().await;
    mock.expect_violations();
    let body = json!({"model": "m", "stream": true, "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
    ]});
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.openai_base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("content must be a string")
    );
    assert_eq!(mock.violations().len(), 1, "{:?}", mock.violations());
    assert_eq!(mock.pending(), 0);
}

#[tokio::test]
async fn anthropic_messages_alternate_and_tool_results_merge_with_the_next_text() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("done"));
    let (reply, _) = complete(&provider(&mock, WireFormat::Anthropic), &after_tools()).await;
    assert_eq!(reply.unwrap().text, "done");
    let sent = mock.last_request().unwrap();
    let messages = sent.body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(sent.body["system"], "You are a careful test agent.");
    let assistant = messages[1]["content"].as_array().unwrap();
    assert_eq!(assistant.len(), 2, "no empty text block");
    assert_eq!(assistant[0]["type"], "tool_use");
    assert_eq!(assistant[0]["input"], json!({}));
    assert_eq!(
        assistant[1]["input"],
        json!({}),
        "invalid arguments are sent as {{}}"
    );
    let user = messages[2]["content"].as_array().unwrap();
    let kinds: Vec<&str> = user.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
    assert_eq!(user[1]["is_error"], true);
    // The normalized view is the same shape the OpenAI format gives.
    assert_eq!(
        sent.messages[2..],
        [
            SeenMessage::ToolResult {
                call_id: "a".into(),
                content: "x\ny".into(),
                is_error: false
            },
            SeenMessage::ToolResult {
                call_id: "b".into(),
                content: "the arguments are not valid JSON".into(),
                is_error: true
            },
            SeenMessage::User {
                text: "also check z".into()
            },
        ]
    );
    mock.assert_clean();
}

#[tokio::test]
async fn cancellation_is_prompt_while_waiting_streaming_or_backing_off() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        let provider = provider_with(
            &mock,
            wire,
            RetryPolicy {
                max_delay: Duration::from_secs(60),
                ..fast_policy()
            },
        );
        let request = hello();
        let mut ignore = |_: &str| {};

        // 1. The server sits on the request.
        mock.push(Reply::text("too late").delay(Duration::from_secs(30)));
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        let started = Instant::now();
        let (result, ()) = tokio::join!(provider.complete(&request, &cancel, &mut ignore), async {
            mock.wait_for_requests(1).await;
            canceller.cancel();
        });
        assert!(
            matches!(result, Err(ProviderError::Cancelled)),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));

        // 2. Mid-stream: the first delta cancels; the next one is 300 ms behind it.
        mock.push(Reply::text("first second third").delta_delay(Duration::from_millis(300)));
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        let mut deltas = Vec::new();
        let started = Instant::now();
        let result = provider
            .complete(&request, &cancel, &mut |text: &str| {
                deltas.push(text.to_owned());
                canceller.cancel();
            })
            .await;
        assert!(
            matches!(result, Err(ProviderError::Cancelled)),
            "{result:?}"
        );
        assert_eq!(deltas, ["first "]);
        assert!(started.elapsed() < Duration::from_secs(5));

        // 3. During a 60 s Retry-After backoff.
        let before = mock.request_count();
        mock.push(Reply::json_error(503, "busy").retry_after(60));
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        let started = Instant::now();
        let (result, ()) = tokio::join!(provider.complete(&request, &cancel, &mut ignore), async {
            mock.wait_for_requests(before + 1).await;
            canceller.cancel();
        });
        assert!(
            matches!(result, Err(ProviderError::Cancelled)),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(mock.request_count(), before + 1, "no retry after cancel");
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error_after_the_retries() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let provider = Provider::new(ProviderConfig {
        name: "nobody".into(),
        wire: WireFormat::Openai,
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: None,
        model: "m".into(),
        context_tokens: 128_000,
        retry: fast_policy(),
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
    })
    .unwrap();
    let (result, _) = complete(&provider, &hello()).await;
    match result {
        Err(ProviderError::Transport { provider, message }) => {
            assert_eq!(provider, "nobody");
            assert!(message.contains("onnect"), "{message}");
        }
        other => panic!("{other:?}"),
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

#[tokio::test]
async fn scripted_functions_see_the_request_and_the_fallback_answers_last() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.push(Reply::tool_call("c1", "read_file", json!({"path": "x"})));
        mock.push_fn(|request| {
            let result = request.tool_result_for("c1").unwrap_or("nothing");
            Reply::text(format!("the file says {result}"))
        });
        let provider = provider(&mock, wire);
        let mut conversation = hello().messages;
        let (reply, _) = complete(&provider, &request(conversation.clone())).await;
        let reply = reply.unwrap();
        conversation.push(Message::Assistant {
            text: reply.text,
            tool_calls: reply.tool_calls.clone(),
        });
        conversation.push(Message::ToolResult {
            call_id: reply.tool_calls[0].id.clone(),
            name: "read_file".into(),
            content: "hi".into(),
            is_error: false,
        });
        let (reply, _) = complete(&provider, &request(conversation.clone())).await;
        assert_eq!(reply.unwrap().text, "the file says hi");
        let (reply, _) = complete(&provider, &request(conversation)).await;
        assert_eq!(reply.unwrap().text, NO_SCRIPT_LEFT);

        let seen = &mock.requests()[1].messages[1];
        assert_eq!(
            seen,
            &SeenMessage::Assistant {
                text: String::new(),
                tool_calls: vec![MockCall::new("c1", "read_file", json!({"path": "x"}))]
            },
            "{wire:?}"
        );
        mock.assert_clean();
    }
}

#[tokio::test]
async fn the_mock_reports_broken_conversations() {
    for wire in BOTH {
        let mock = MockModel::start().await;
        mock.expect_violations();
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        };
        let result = |id: &str| Message::ToolResult {
            call_id: id.into(),
            name: "list_dir".into(),
            content: "r".into(),
            is_error: false,
        };
        let mut broken = request(vec![
            Message::User { text: "u".into() },
            Message::Assistant {
                text: "t".into(),
                tool_calls: vec![call("a"), call("b")],
            },
            result("a"),
            result("ghost"),
            Message::Assistant {
                text: "t".into(),
                tool_calls: vec![call("a")],
            },
            result("a"),
        ]);
        broken.system = String::new();
        let (reply, _) = complete(&provider(&mock, wire), &broken).await;
        reply.unwrap();
        let violations = mock.violations().join("\n");
        for expected in [
            "system prompt",
            "\"ghost\" answers no earlier call",
            "call \"b\" has 0 results",
            "duplicate call id \"a\"",
        ] {
            assert!(
                violations.contains(expected),
                "{wire:?}: no {expected:?} in\n{violations}"
            );
        }
    }
}
