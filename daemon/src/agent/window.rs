//! The turn's side of the context budget: the token counts of the task's messages (each
//! counted once), the agent's earlier conversation, the request fitted to the model's window
//! (`context::build`), what each request cost, and the background summary passes.
//!
//! Summaries never sit on the task's critical path: a pass runs on the runtime's tracker
//! while the task goes on, at most one per task at a time. A pass that fails moves nothing
//! (the summary stays where it was) and is tried again at a later round; one that succeeds
//! records a `summary` event the next request uses. The agent's conversation across tasks
//! gets the same treatment at the start of each task: its most recent 32 lines go into the
//! system prompt, and older lines not yet summarized are condensed into the agent's summary.

use std::sync::Arc;

use lazyboy_protocol::EventBody;
use tokio::task::JoinHandle;

use super::Runtime;
use super::history::History;
use super::turn_state::{Halt, Turn};
use crate::context::tokens::Counter;
use crate::context::{self, Built, Kind, Parts, TooBig, output_reserve};
use crate::providers::{Message, ModelReply, ModelRequest, Provider, TokenUsage, ToolDef, images};
use crate::store::TaskRow;
use crate::store::conversation::Line;

/// Lines of the agent's earlier conversation every request of a new task carries.
pub const RECENT_LINES: u32 = 32;
/// Rounds left out and not yet summarized before a summary pass starts (fewer are not worth
/// a model request: the request notes what it leaves out).
pub const SUMMARY_EVERY: usize = 8;
/// What one screenshot costs in a request (a 1280x800 PNG: about 1,100 tokens for OpenAI's
/// tiles, 1,365 for Anthropic's width × height / 750).
const IMAGE_TOKENS: u64 = 1400;
/// How much of one tool result or argument a summary pass reads.
const EXCERPT: usize = 1500;

const SUMMARY_SYSTEM: &str = "You condense the older part of an AI agent's work log so the \
agent can go on without it. Write plain text with these headings: Goals; Constraints (what \
the person asked for or ruled out); Decisions; Done (with the evidence: files, commands, \
results); To do; Index (the seqs of the events that matter, as `#seq what`). Fold in the \
previous summary if one is given. Be concise: at most 400 words. Never invent anything.";

/// The turn's context state.
pub(super) struct Window {
    pub(super) counter: Arc<Counter>,
    /// Tokens of each message of the history (same indices), whole and stubbed, counted once.
    tokens: Vec<u64>,
    stub_tokens: Vec<u64>,
    tools: u64,
    /// Images in the history: the latest [`images::KEEP`] of them are sent.
    images: usize,
    /// The agent's earlier conversation, for the system prompt.
    pub(super) prior: Option<String>,
    context: u64,
    /// A summary pass in flight, and the round before which no new one starts.
    pass: Option<(JoinHandle<bool>, i64)>,
    /// The seq the last summary that landed covers up to: until the history has it, no new
    /// pass starts (it would cover the same rounds again).
    landed_upto: i64,
    retry_at_round: u64,
}

impl Window {
    pub(super) fn new(provider: &Provider, tools: &[ToolDef]) -> Window {
        let counter = Arc::new(Counter::for_model(&provider.config().model));
        Window {
            tools: counter.tools(tools),
            counter,
            tokens: Vec::new(),
            stub_tokens: Vec::new(),
            images: 0,
            prior: None,
            context: provider.config().context_tokens,
            pass: None,
            landed_upto: 0,
            retry_at_round: 0,
        }
    }

    /// The next request's conversation, fitted to the window.
    pub(super) fn fit(&mut self, history: &History, system: &str) -> Result<Built, TooBig> {
        let new = self.tokens.len()..history.messages.len();
        for (message, meta) in history.messages[new.clone()].iter().zip(&history.meta[new]) {
            let tokens = self.counter.message(message);
            self.images += usize::from(matches!(message, Message::Image { .. }));
            self.tokens.push(tokens);
            self.stub_tokens
                .push(context::stub_tokens(&self.counter, message, *meta, tokens));
        }
        let parts = Parts {
            fixed: self.counter.text(system)
                + 4
                + self.tools
                + IMAGE_TOKENS * self.images.min(images::KEEP) as u64,
            messages: &history.messages,
            meta: &history.meta,
            tokens: &self.tokens,
            stub_tokens: &self.stub_tokens,
            summary: history
                .summary
                .as_ref()
                .map(|(seq, text)| (*seq, text.as_str())),
            context: self.context,
        };
        context::build(&self.counter, &parts)
    }
}

impl Turn {
    /// At the start of a top-level task: the agent's recent conversation (before this task)
    /// goes into every request; older lines not yet summarized get a background pass.
    pub(super) async fn load_prior(
        &self,
        window: &mut Window,
        provider: &Provider,
        history: &History,
    ) -> Result<(), Halt> {
        if self.task.parent_id.is_some() {
            return Ok(());
        }
        let start = history.meta.first().map_or(i64::MAX, |m| m.seq);
        let store = &self.rt.store;
        let recent = store
            .conversation_lines(self.task.agent_id, start, RECENT_LINES)
            .await?;
        let summary = store.agent_summary(self.task.agent_id).await?;
        if recent.is_empty() && summary.is_none() {
            return Ok(());
        }
        let mut text = String::from(
            "Your earlier conversation with the person, from your other tasks (most recent \
             last; read_conversation searches all of it):",
        );
        if let Some((_, summary)) = &summary {
            text.push_str(&format!("\nSummary of what came before:\n{summary}"));
        }
        for line in &recent {
            text.push_str(&format!(
                "\n- #{} {}: {}",
                line.seq,
                who(line),
                excerpt(&line.text)
            ));
        }
        window.prior = Some(text);
        // Older lines than the recent ones, not yet in the agent's summary.
        let covered = summary.as_ref().map_or(0, |(upto, _)| *upto);
        if let Some(first) = recent.first() {
            let older: Vec<Line> = store
                .conversation_lines(self.task.agent_id, first.seq, 200)
                .await?
                .into_iter()
                .filter(|l| l.seq > covered)
                .collect();
            if let Some(last) = older.last() {
                let upto = last.seq;
                let transcript: Vec<String> = older
                    .iter()
                    .map(|l| format!("#{} {}: {}", l.seq, who(l), excerpt(&l.text)))
                    .collect();
                let previous = summary.map(|(_, text)| text);
                spawn_pass(
                    &self.rt,
                    provider.clone(),
                    &self.task,
                    Target::Agent,
                    previous,
                    transcript,
                    upto,
                );
            }
        }
        Ok(())
    }

    /// Records what a request cost: the provider's figures, else the daemon's count (marked
    /// estimated); the provider's figures also calibrate the estimate.
    pub(super) async fn record_usage(
        &self,
        window: &Window,
        provider: &Provider,
        sent: u64,
        reply: &ModelReply,
    ) -> Result<u64, Halt> {
        let (usage, estimated) = match reply.usage {
            Some(usage) => {
                window.counter.calibrate(sent, usage.input);
                (usage, false)
            }
            None => {
                let output = window.counter.text(&reply.text)
                    + reply
                        .tool_calls
                        .iter()
                        .map(|c| window.counter.text(&c.name) + window.counter.text(&c.arguments))
                        .sum::<u64>();
                let usage = TokenUsage {
                    input: sent,
                    cached: 0,
                    output,
                };
                (usage, true)
            }
        };
        record(
            &self.rt,
            &self.task,
            &provider.config().model,
            usage,
            estimated,
        )
        .await?;
        Ok(usage.input + usage.output)
    }

    /// Starts a summary pass when the request left rounds out that no summary covers (and
    /// none is in flight, and a failed one's retry round has come).
    pub(super) fn maybe_summarize(
        &self,
        window: &mut Window,
        provider: &Provider,
        history: &History,
        built: &Built,
    ) {
        if let Some((pass, _)) = &window.pass {
            if !pass.is_finished() {
                return;
            }
            if let Some((pass, upto)) = window.pass.take() {
                let ok = futures_util::FutureExt::now_or_never(pass)
                    .and_then(Result::ok)
                    .unwrap_or(false);
                if ok {
                    window.landed_upto = upto;
                } else {
                    window.retry_at_round = history.rounds + 1;
                }
            }
        }
        let summarized = history.summary.as_ref().map_or(0, |(seq, _)| *seq);
        if summarized < window.landed_upto {
            return;
        }
        let Some(upto) = built.uncovered_upto else {
            return;
        };
        // The first time anything is left out, summarize at once; later, in batches.
        if history.summary.is_some() && built.uncovered_rounds < SUMMARY_EVERY {
            return;
        }
        if history.rounds < window.retry_at_round {
            return;
        }
        let from = history.summary.as_ref().map_or(0, |(seq, _)| *seq);
        // What one pass can read: the window less room for the prompt and the answer.
        let room = window
            .context
            .saturating_sub(output_reserve(window.context) + 2000);
        let mut used = 0;
        let mut last = from;
        let mut transcript = Vec::new();
        for (message, meta) in history.messages.iter().zip(&history.meta) {
            if meta.seq <= from || meta.seq > upto {
                continue;
            }
            let line = render(message, meta.kind, meta.seq);
            used += window.counter.text(&line);
            if used > room && !transcript.is_empty() {
                break;
            }
            transcript.push(line);
            last = meta.seq;
        }
        if transcript.is_empty() {
            return;
        }
        let previous = history.summary.as_ref().map(|(_, text)| text.clone());
        window.pass = Some((
            spawn_pass(
                &self.rt,
                provider.clone(),
                &self.task,
                Target::Task,
                previous,
                transcript,
                last,
            ),
            last,
        ));
    }
}

/// Where a summary goes: the task's thread, or the agent's chat thread.
#[derive(Clone, Copy)]
enum Target {
    Task,
    Agent,
}

/// One background summary pass; `true` when it recorded a summary.
fn spawn_pass(
    rt: &Arc<Runtime>,
    provider: Provider,
    task: &TaskRow,
    target: Target,
    previous: Option<String>,
    transcript: Vec<String>,
    upto_seq: i64,
) -> JoinHandle<bool> {
    let runtime = rt.clone();
    let task = task.clone();
    let mut text = String::new();
    if let Some(previous) = previous {
        text.push_str(&format!("Previous summary:\n{previous}\n\n"));
    }
    text.push_str("The log to condense:\n");
    text.push_str(&transcript.join("\n"));
    let request = ModelRequest {
        system: SUMMARY_SYSTEM.to_owned(),
        messages: vec![Message::User { text }],
        tools: Vec::new(),
    };
    // Tracked, so a shutdown waits for it; it ends on the shutdown token.
    rt.tracker.spawn(async move {
        let rt = runtime;
        let reply = provider
            .complete(&request, &rt.shutdown, &mut |_: &str| {})
            .await;
        let reply = match reply {
            Ok(reply) if !reply.text.trim().is_empty() => reply,
            Ok(_) => {
                tracing::warn!(task = %task.id, "a summary pass came back empty; it will be retried");
                return false;
            }
            Err(error) => {
                tracing::warn!(task = %task.id, %error, "a summary pass failed; it will be retried");
                return false;
            }
        };
        if let Some(usage) = reply.usage {
            let model = format!("{} (summary)", provider.config().model);
            if let Err(error) = record(&rt, &task, &model, usage, false).await {
                tracing::warn!(%error, "cannot record a summary pass's usage");
            }
        }
        let body = EventBody::Summary {
            upto_seq,
            text: reply.text.trim().to_owned(),
        };
        let stored = match target {
            Target::Task => rt.store.append_to_task(&task, &body).await.map(|_| ()),
            Target::Agent => rt.store.append_to_agent(&task.agent, &body).await.map(|_| ()),
        };
        match stored {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "cannot record a summary");
                false
            }
        }
    })
}

/// Records one request's usage (the event and the task's sums, priced where configured).
async fn record(
    rt: &Runtime,
    task: &TaskRow,
    model: &str,
    usage: TokenUsage,
    estimated: bool,
) -> Result<(), crate::store::StoreError> {
    let base = model.trim_end_matches(" (summary)");
    let cost = rt
        .config
        .price(base)
        .map(|price| price.microusd(usage.input, usage.cached, usage.output));
    let body = EventBody::ModelUsage {
        model: model.to_owned(),
        input_tokens: usage.input,
        cached_tokens: usage.cached,
        output_tokens: usage.output,
        estimated,
    };
    rt.store.record_usage(task, &body, cost).await
}

fn who(line: &Line) -> &'static str {
    if line.who == "agent" { "you" } else { "person" }
}

fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT {
        return text.to_owned();
    }
    let mut end = EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes in all]", &text[..end], text.len())
}

/// One message as a line of the transcript a summary pass reads.
fn render(message: &Message, kind: Kind, seq: i64) -> String {
    match message {
        Message::User { text } => {
            let who = match kind {
                Kind::Objective => "objective",
                Kind::Person => "person",
                _ => "note",
            };
            format!("#{seq} {who}: {}", excerpt(text))
        }
        Message::Assistant { text, tool_calls } => {
            let calls: Vec<String> = tool_calls
                .iter()
                .map(|c| format!("{} {}", c.name, excerpt(&c.arguments)))
                .collect();
            format!("#{seq} you: {} {}", excerpt(text), calls.join("; "))
        }
        Message::ToolResult {
            name,
            content,
            is_error,
            ..
        } => {
            let how = if *is_error { "error" } else { "result" };
            format!("#{seq} {how} of {name}: {}", excerpt(content))
        }
        Message::Image { path, .. } => format!("#{seq} image {path}"),
    }
}
