//! What goes wrong on the wire: cut-off streams, server errors, rate limits, empty replies,
//! refused connections, cancellation. Each is retried or surfaced with its message.

use super::*;

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
