//! What a notification says, built from the event it is about: the same for every channel
//! (Web Push encrypts it, the webhook posts it, ntfy and email render it as text). Pure.
//!
//! The JSON stays under [`MAX_JSON`] bytes (Web Push services take about 4 KB): a long
//! question or message is cut, with an ellipsis, until it fits.

use lazyboy_protocol::{
    APPROVAL_OPTIONS, Event, EventBody, NotifyAction, NotifyKind, NotifyPayload,
};

/// The largest payload JSON.
pub const MAX_JSON: usize = 3000;
/// Actions a device shows at most (Chrome shows two; the rest are in the page).
const MAX_ACTIONS: usize = 2;

/// The notification's id for the event at `source`: the same on every channel, every
/// attempt and every daemon.
pub fn id_for(source: i64) -> String {
    format!("n{source}")
}

/// The dashboard link for the agent (and its task).
pub fn link(base: &str, agent: &str, task: Option<&str>) -> String {
    let base = base.trim_end_matches('/');
    let mut url = format!("{base}/?agent={}", encode(agent));
    if let Some(task) = task {
        url.push_str("&task=");
        url.push_str(&encode(task));
    }
    url
}

fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The payload for `event`, a notification of `kind`, linking under `base`.
pub fn build(kind: NotifyKind, event: &Event, base: &str) -> NotifyPayload {
    let agent = event.agent.clone();
    let (title, body, actions) = match event.body() {
        Some(EventBody::Question {
            question,
            options,
            takeover,
            approval,
            ..
        }) => match (approval, takeover) {
            (Some(approval), _) => (
                format!("{agent} asks to {}", approval.tool),
                approval.summary.clone(),
                vec![
                    action("approve", APPROVAL_OPTIONS[0]),
                    action("deny", APPROVAL_OPTIONS[1]),
                ],
            ),
            (None, Some(why)) => (
                format!("{agent} needs you to take over ({why})"),
                question,
                Vec::new(),
            ),
            (None, None) => {
                let mut body = question;
                for (n, option) in options.iter().enumerate() {
                    body.push_str(&format!("\n{}. {option}", n + 1));
                }
                let actions = options
                    .iter()
                    .take(MAX_ACTIONS)
                    .enumerate()
                    .map(|(n, option)| action(&format!("option:{}", n + 1), option))
                    .collect();
                (format!("{agent} asks"), body, actions)
            }
        },
        Some(EventBody::TaskFinished { verdict, message }) => (
            format!("{agent}: task {}", verdict_word(verdict)),
            message,
            Vec::new(),
        ),
        Some(EventBody::ScheduleSkipped {
            schedule, reason, ..
        }) => (
            format!("{agent}: schedule {schedule} did not start"),
            reason,
            Vec::new(),
        ),
        _ => (
            format!("{agent}: {}", event.kind),
            String::new(),
            Vec::new(),
        ),
    };
    let mut payload = NotifyPayload {
        id: id_for(event.seq),
        kind,
        title: cut(&title, 200),
        body,
        agent,
        task: event.task.clone(),
        url: link(base, &event.agent, event.task.as_deref()),
        actions,
        ts: event.at_ms,
    };
    fit(&mut payload);
    payload
}

/// A test notification.
pub fn test(base: &str, id: String, now_ms: i64) -> NotifyPayload {
    NotifyPayload {
        id,
        kind: NotifyKind::Test,
        title: "LazyBoy: test notification".into(),
        body: "If you can read this, this channel reaches you.".into(),
        agent: String::new(),
        task: None,
        url: base.to_owned(),
        actions: Vec::new(),
        ts: now_ms,
    }
}

fn action(action: &str, title: &str) -> NotifyAction {
    NotifyAction {
        action: action.to_owned(),
        title: cut(title, 40),
    }
}

fn verdict_word(verdict: lazyboy_protocol::Verdict) -> &'static str {
    use lazyboy_protocol::Verdict;
    match verdict {
        Verdict::Done => "done",
        Verdict::Answer => "answered",
        Verdict::Blocked => "blocked",
        Verdict::Failed => "failed",
        Verdict::BudgetExhausted => "out of budget",
        Verdict::Waiting => "waiting",
        Verdict::Cancelled => "cancelled",
    }
}

/// `text` cut to at most `max` characters, an ellipsis marking the cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Cuts the body so the JSON is under [`MAX_JSON`] bytes: as many characters as fit once
/// escaped, then an ellipsis.
fn fit(payload: &mut NotifyPayload) {
    if json(payload).len() <= MAX_JSON {
        return;
    }
    let body = std::mem::take(&mut payload.body);
    let overhead = json(payload).len();
    // The ellipsis is three bytes of UTF-8.
    let mut room = MAX_JSON.saturating_sub(overhead + 3);
    let mut kept = String::new();
    for c in body.chars() {
        let escaped = serde_json::to_string(&c).map_or(6, |s| s.len() - 2);
        if escaped > room {
            break;
        }
        room -= escaped;
        kept.push(c);
    }
    kept.push('…');
    payload.body = kept;
}

/// The payload as JSON bytes.
pub fn json(payload: &NotifyPayload) -> Vec<u8> {
    serde_json::to_vec(payload).unwrap_or_default()
}

/// The payload as plain text (ntfy's body, the mail's): the body, then the link.
pub fn text(payload: &NotifyPayload) -> String {
    let mut text = payload.body.clone();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(&payload.url);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(text: &str, options: &[&str]) -> Event {
        Event {
            seq: 42,
            kind: "question".into(),
            agent: "researcher".into(),
            thread: "th".into(),
            task: Some("t-1".into()),
            at_ms: 7,
            data: serde_json::json!({
                "call_id": "c1", "question": text, "options": options, "takeover": null
            }),
        }
    }

    #[test]
    fn a_question_names_the_agent_its_options_and_links_to_the_task() {
        let payload = build(
            NotifyKind::Question,
            &question("Which db?", &["SQLite", "PostgreSQL", "Both"]),
            "http://192.168.1.5:8787/",
        );
        assert_eq!(payload.id, "n42");
        assert_eq!(payload.title, "researcher asks");
        assert_eq!(payload.body, "Which db?\n1. SQLite\n2. PostgreSQL\n3. Both");
        assert_eq!(
            payload.url,
            "http://192.168.1.5:8787/?agent=researcher&task=t-1"
        );
        let actions: Vec<&str> = payload.actions.iter().map(|a| a.action.as_str()).collect();
        assert_eq!(actions, ["option:1", "option:2"]);
    }

    #[test]
    fn long_questions_are_cut_to_fit() {
        let long = "é\"".repeat(5000);
        let payload = build(NotifyKind::Question, &question(&long, &[]), "http://h/");
        let size = json(&payload).len();
        assert!(size <= MAX_JSON, "{size}");
        assert!(payload.body.ends_with('…'));
        assert!(payload.body.len() > 1000, "kept as much as fits");
    }
}
