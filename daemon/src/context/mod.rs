//! The context budget: every request is built to fit the model's window, on copies. The
//! stored history is never changed.
//!
//! A request always keeps the system prompt (the contract, the agent's instructions, its
//! earlier conversation, the plan and running commands), the tools, the task's objective, and
//! every message the person wrote in the task. Then, newest first:
//! whole rounds (a model reply with its results and the notes after them) while they fit;
//! older rounds with their tool results shrunk to a stub that names the result's size and
//! the seq to fetch it by (`read_conversation`); beyond that, the task's summary (or a note
//! saying what was left out). A request that cannot fit even then is an error the loop turns
//! into a `failed` verdict, never a provider 400. Pure logic, no IO.

pub mod tokens;

use crate::providers::{Message, ToolCall};
use tokens::Counter;

/// What a message of the conversation is, for trimming it to the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The task's objective (its first message).
    Objective,
    /// Something the person wrote in this task (steering, a continue): always kept.
    Person,
    /// A runtime note (a reminder, a revival).
    Note,
    /// A model reply with its calls: a round starts here.
    Assistant,
    /// One call's result.
    Result,
}

/// One message's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    /// The event it came from (0 when the history was built without seqs).
    pub seq: i64,
}

/// Arguments longer than this are replaced in stubbed rounds (a big `write_file`, say).
const LONG_ARGUMENTS: usize = 2000;

/// Tokens kept free for the model's answer: an eighth of the window, 1k to 16k.
pub fn output_reserve(context: u64) -> u64 {
    (context / 8).clamp(1024, 16_384)
}

/// What a request is built from.
pub struct Parts<'a> {
    /// Tokens of the system prompt and the tool definitions.
    pub fixed: u64,
    pub messages: &'a [Message],
    pub meta: &'a [Meta],
    /// Tokens of each message (same indices), and of its stubbed form ([`stub_tokens`]).
    pub tokens: &'a [u64],
    pub stub_tokens: &'a [u64],
    /// The task's latest summary: the seq it covers up to, and its text.
    pub summary: Option<(i64, &'a str)>,
    /// The model's context window.
    pub context: u64,
}

/// A request's conversation, fitted.
#[derive(Debug)]
pub struct Built {
    pub messages: Vec<Message>,
    /// Tokens of the whole request (`fixed` included).
    pub tokens: u64,
    /// Rounds sent with their results stubbed, and rounds left out.
    pub stubbed: usize,
    pub dropped: usize,
    /// The last seq of the rounds left out and not covered by the summary: what a summary
    /// pass should condense next; and how many rounds that is.
    pub uncovered_upto: Option<i64>,
    pub uncovered_rounds: usize,
}

/// It cannot fit: what the kept parts need, and what the window allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooBig {
    pub needed: u64,
    pub available: u64,
}

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the task no longer fits the model's context window: the instructions, the \
             objective, the person's messages and the latest round need {} tokens, but only {} \
             are available (context_tokens minus room for the answer). Give the model a larger \
             context_tokens, or start a new task with a shorter objective.",
            self.needed, self.available
        )
    }
}

/// One round: a model reply and what followed it, as message indices.
#[derive(Debug, Clone, Copy)]
struct Round {
    start: usize,
    end: usize,
}

/// Builds the conversation of the next request.
pub fn build(counter: &Counter, parts: &Parts<'_>) -> Result<Built, TooBig> {
    let n = parts.messages.len();
    let first_round = parts.meta.iter().position(|m| m.kind == Kind::Assistant);
    let prefix_end = first_round.unwrap_or(n);
    let mut rounds = Vec::new();
    if let Some(first) = first_round {
        let mut start = first;
        for i in first + 1..n {
            if parts.meta[i].kind == Kind::Assistant {
                rounds.push(Round { start, end: i });
                start = i;
            }
        }
        rounds.push(Round { start, end: n });
    }
    let kept = |i: usize| i < prefix_end || parts.meta[i].kind == Kind::Person;
    let available = parts.context.saturating_sub(output_reserve(parts.context));
    let must: u64 = parts.fixed
        + (0..n)
            .filter(|&i| kept(i))
            .map(|i| parts.tokens[i])
            .sum::<u64>();
    let whole_cost = |r: &Round| -> u64 {
        (r.start..r.end)
            .filter(|&i| !kept(i))
            .map(|i| parts.tokens[i])
            .sum()
    };
    let stub_cost = |r: &Round| -> u64 {
        (r.start..r.end)
            .filter(|&i| !kept(i))
            .map(|i| parts.stub_tokens[i])
            .sum()
    };
    // Newest first: whole rounds, then stubbed ones, in what `room` leaves.
    let fit = |room: u64| -> (usize, usize, u64) {
        let mut left = room;
        let mut whole_from = rounds.len();
        while whole_from > 0 {
            let cost = whole_cost(&rounds[whole_from - 1]);
            if cost > left {
                break;
            }
            left -= cost;
            whole_from -= 1;
        }
        let mut stub_from = whole_from;
        while stub_from > 0 {
            let cost = stub_cost(&rounds[stub_from - 1]);
            if cost > left {
                break;
            }
            left -= cost;
            stub_from -= 1;
        }
        (whole_from, stub_from, room - left)
    };
    let too_big = |extra: u64| TooBig {
        needed: must + extra,
        available,
    };
    if must > available {
        return Err(too_big(0));
    }
    let mut room = available - must;
    let everything: u64 = rounds.iter().map(whole_cost).sum();
    let mut header_cost = 0;
    if everything > room {
        // Something is shrunk or left out: keep room for the note that says so (its longest
        // form: every round, the newest seq).
        let last_seq = parts.meta.last().map_or(0, |m| m.seq);
        let text = omitted(parts.summary, rounds.len(), last_seq);
        header_cost = counter.message(&Message::User { text });
        room = room.saturating_sub(header_cost);
    }
    let (whole_from, stub_from, mut used) = fit(room);
    let header = (stub_from > 0).then(|| {
        used += header_cost;
        let last = parts.meta[rounds[stub_from - 1].end - 1].seq;
        Message::User {
            text: omitted(parts.summary, stub_from, last),
        }
    });
    if let Some(newest) = rounds.last().filter(|_| stub_from == rounds.len()) {
        return Err(too_big(stub_cost(newest)));
    }

    let mut messages = Vec::with_capacity(n.min(4096));
    messages.extend(parts.messages[..prefix_end].iter().cloned());
    let dropped_rounds = &rounds[..stub_from];
    if let Some(header) = header {
        messages.push(header);
    }
    for round in dropped_rounds {
        for i in round.start..round.end {
            if parts.meta[i].kind == Kind::Person {
                messages.push(parts.messages[i].clone());
            }
        }
    }
    for round in &rounds[stub_from..whole_from] {
        for i in round.start..round.end {
            let short = if kept(i) {
                None
            } else {
                stub(&parts.messages[i], parts.meta[i])
            };
            messages.push(short.unwrap_or_else(|| parts.messages[i].clone()));
        }
    }
    for round in &rounds[whole_from..] {
        messages.extend(parts.messages[round.start..round.end].iter().cloned());
    }
    let covered = parts.summary.map_or(0, |(upto, _)| upto);
    let uncovered_rounds = rounds[..stub_from]
        .iter()
        .filter(|r| parts.meta[r.end - 1].seq > covered)
        .count();
    let uncovered_upto =
        (uncovered_rounds > 0).then(|| parts.meta[rounds[stub_from - 1].end - 1].seq);
    Ok(Built {
        messages,
        tokens: must + used,
        stubbed: whole_from - stub_from,
        dropped: stub_from,
        uncovered_upto,
        uncovered_rounds,
    })
}

/// The note that stands for the rounds left out: the summary when there is one.
fn omitted(summary: Option<(i64, &str)>, rounds: usize, last_seq: i64) -> String {
    match summary {
        Some((upto, text)) if upto >= last_seq => format!(
            "[runtime] Summary of the earlier part of this task (its {rounds} oldest rounds are \
             left out here; read_conversation shows them):\n{text}"
        ),
        Some((upto, text)) => format!(
            "[runtime] Summary of the earlier part of this task, up to seq {upto} (the \
             {rounds} oldest rounds, up to seq {last_seq}, are left out here; \
             read_conversation shows them):\n{text}"
        ),
        None => format!(
            "[runtime] The {rounds} oldest rounds of this task (up to seq {last_seq}) are left \
             out to fit the context window; read_conversation shows them."
        ),
    }
}

/// Tokens of a message in a stubbed round (its own when it has no stub): counted once per
/// message by the caller and passed in [`Parts::stub_tokens`].
pub fn stub_tokens(counter: &Counter, message: &Message, meta: Meta, tokens: u64) -> u64 {
    stub(message, meta).map_or(tokens, |short| counter.message(&short))
}

/// The short form of a message in a stubbed round; `None` keeps it as it is.
fn stub(message: &Message, meta: Meta) -> Option<Message> {
    match message {
        Message::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } if content.len() > 200 => Some(Message::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            content: format!(
                "[{name} result: {} bytes, left out to fit the context window; \
                 read_conversation {{\"seq\": {}}} shows it]",
                content.len(),
                meta.seq
            ),
            is_error: *is_error,
        }),
        Message::Assistant { text, tool_calls }
            if tool_calls
                .iter()
                .any(|c| c.arguments.len() > LONG_ARGUMENTS) =>
        {
            let calls = tool_calls
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    if c.arguments.len() > LONG_ARGUMENTS {
                        c.arguments = serde_json::json!({
                            "left_out": format!(
                                "{} bytes of arguments; read_conversation {{\"seq\": {}}} shows them",
                                c.arguments.len(),
                                meta.seq
                            )
                        })
                        .to_string();
                    }
                    c
                })
                .collect::<Vec<ToolCall>>();
            Some(Message::Assistant {
                text: text.clone(),
                tool_calls: calls,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
