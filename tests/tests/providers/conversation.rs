//! What is sent: tool calls and results in each wire format, and the mock's own checks of
//! the conversation it receives.

use super::*;

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
