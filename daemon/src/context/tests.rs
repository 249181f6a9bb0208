use super::*;

/// A task: the objective, then `rounds` rounds of one call with a `result_len`-byte result;
/// the person steers at round `steer_at`.
fn task(rounds: usize, result_len: usize, steer_at: usize) -> (Vec<Message>, Vec<Meta>) {
    let mut messages = vec![Message::User {
        text: "objective: count the lines".into(),
    }];
    let mut meta = vec![Meta {
        kind: Kind::Objective,
        seq: 1,
    }];
    let mut seq = 1;
    for r in 0..rounds {
        seq += 1;
        messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("c{r}"),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"f{r}\"}}"),
            }],
        });
        meta.push(Meta {
            kind: Kind::Assistant,
            seq,
        });
        seq += 1;
        messages.push(Message::ToolResult {
            call_id: format!("c{r}"),
            name: "read_file".into(),
            content: format!("{r}:").repeat(result_len / 3 + 1),
            is_error: false,
        });
        meta.push(Meta {
            kind: Kind::Result,
            seq,
        });
        if r == steer_at {
            seq += 1;
            messages.push(Message::User {
                text: "the person: only count .rs files".into(),
            });
            meta.push(Meta {
                kind: Kind::Person,
                seq,
            });
        }
    }
    (messages, meta)
}

fn built(
    counter: &Counter,
    messages: &[Message],
    meta: &[Meta],
    summary: Option<(i64, &str)>,
    context: u64,
) -> Result<Built, TooBig> {
    let tokens: Vec<u64> = messages.iter().map(|m| counter.message(m)).collect();
    let stubs: Vec<u64> = messages
        .iter()
        .zip(meta)
        .zip(&tokens)
        .map(|((m, meta), t)| stub_tokens(counter, m, *meta, *t))
        .collect();
    build(
        counter,
        &Parts {
            fixed: 500,
            messages,
            meta,
            tokens: &tokens,
            stub_tokens: &stubs,
            summary,
            context,
        },
    )
}

/// Every result answers a call of the assistant message before it, and every call has one.
fn assert_wire_valid(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m {
            Message::Assistant { tool_calls, .. } => {
                assert!(open.is_empty(), "calls left unanswered: {open:?}");
                open = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            Message::ToolResult { call_id, .. } => {
                let at = open.iter().position(|id| id == call_id);
                assert!(at.is_some(), "a result for no open call: {call_id}");
                open.remove(at.unwrap());
            }
            Message::User { .. } | Message::Image { .. } => {}
        }
    }
}

#[test]
fn a_small_task_is_sent_whole() {
    let counter = Counter::for_model("gpt-4o");
    let (messages, meta) = task(5, 300, 99);
    let out = built(&counter, &messages, &meta, None, 128_000).unwrap();
    assert_eq!(out.messages, messages);
    assert_eq!((out.stubbed, out.dropped, out.uncovered_upto), (0, 0, None));
}

#[test]
fn a_long_task_keeps_the_objective_the_person_and_the_newest_rounds() {
    let counter = Counter::for_model("gpt-4o");
    let (messages, meta) = task(300, 4000, 3);
    let context = 16_000;
    let out = built(&counter, &messages, &meta, None, context).unwrap();
    let sent: u64 = 500 + out.messages.iter().map(|m| counter.message(m)).sum::<u64>();
    assert!(sent <= context - output_reserve(context), "{sent}");
    assert!(out.tokens >= sent, "the count covers what is sent");
    assert_eq!(out.messages[0], messages[0], "the objective comes first");
    let texts: Vec<String> = out
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t == "the person: only count .rs files")
    );
    assert!(texts.iter().any(|t| t.contains("oldest rounds")));
    assert!(out.stubbed > 0 && out.dropped > 0, "{out:?}");
    // What a summary should condense next: up to the message before the first round kept.
    let first_kept = meta
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == Kind::Assistant)
        .nth(out.dropped)
        .unwrap()
        .0;
    assert_eq!(out.uncovered_upto, Some(meta[first_kept - 1].seq));
    // The newest round is whole; an older one kept is a stub naming its size and seq.
    assert_eq!(out.messages.last(), messages.last());
    let stubbed = out.messages.iter().find_map(|m| match m {
        Message::ToolResult { content, .. } if content.contains("left out") => Some(content),
        _ => None,
    });
    assert!(stubbed.unwrap().contains("bytes"), "{stubbed:?}");
    assert_wire_valid(&out.messages);
}

#[test]
fn the_summary_stands_for_the_rounds_left_out() {
    let counter = Counter::for_model("gpt-4o");
    let (messages, meta) = task(300, 4000, 99);
    let upto = meta[400].seq;
    let out = built(
        &counter,
        &messages,
        &meta,
        Some((upto, "DONE: read 200 files")),
        16_000,
    )
    .unwrap();
    let summary = out
        .messages
        .iter()
        .any(|m| matches!(m, Message::User { text } if text.contains("DONE: read 200 files")));
    assert!(summary);
    assert_wire_valid(&out.messages);
}

#[test]
fn what_cannot_fit_is_an_error_not_a_request() {
    let counter = Counter::for_model("gpt-4o");
    let messages = vec![Message::User {
        text: "word ".repeat(20_000),
    }];
    let meta = vec![Meta {
        kind: Kind::Objective,
        seq: 1,
    }];
    let error = built(&counter, &messages, &meta, None, 16_000).unwrap_err();
    assert!(error.needed > error.available, "{error:?}");
    assert!(error.to_string().contains("context window"));
}
