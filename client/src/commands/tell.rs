//! `lazyboy tell AGENT TEXT`: a message to an agent, as a person writes it. The daemon decides
//! what it does (steer the running task, answer its question, start a task, or only note it)
//! and says so; this prints that answer, whatever it is.

use hyper::Method;
use lazyboy_protocol::{MessageAccepted, MessageAction, PostMessage};

use crate::connection::Client;

pub async fn run(
    client: &Client,
    agent: &str,
    text: &str,
    note: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let accepted = send(client, agent, text, note).await?;
    if json {
        println!("{}", serde_json::to_string(&accepted)?);
    } else {
        println!("{}", describe(agent, &accepted));
    }
    Ok(0)
}

/// Posts the message; the daemon's answer says what it did.
pub async fn send(
    client: &Client,
    agent: &str,
    text: &str,
    note: bool,
) -> anyhow::Result<MessageAccepted> {
    let request = PostMessage {
        text: text.to_owned(),
        note,
    };
    Ok(client
        .call(
            Method::POST,
            &format!("/api/agents/{agent}/messages"),
            Some(&request),
        )
        .await?)
}

/// What the message did, in one line: "steered task T", "answered T's question", "started
/// task T", "noted in AGENT's chat".
pub fn describe(agent: &str, accepted: &MessageAccepted) -> String {
    let task = accepted.task.as_deref().unwrap_or("?");
    match accepted.action {
        MessageAction::Steered => format!("steered task {task}"),
        MessageAction::Answered => format!("answered {task}'s question"),
        MessageAction::Started => format!("started task {task}"),
        MessageAction::Noted => format!("noted in {agent}'s chat"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_reads_as_a_sentence() {
        let accepted = |action, task: Option<&str>| MessageAccepted {
            thread: "th".into(),
            seq: 1,
            task: task.map(str::to_owned),
            steered: action == MessageAction::Steered,
            action,
        };
        let t = Some("t1");
        assert_eq!(
            describe("a", &accepted(MessageAction::Steered, t)),
            "steered task t1"
        );
        assert_eq!(
            describe("a", &accepted(MessageAction::Answered, t)),
            "answered t1's question"
        );
        assert_eq!(
            describe("a", &accepted(MessageAction::Started, t)),
            "started task t1"
        );
        assert_eq!(
            describe("a", &accepted(MessageAction::Noted, None)),
            "noted in a's chat"
        );
    }
}
