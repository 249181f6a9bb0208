//! `lazyboy notify ls|test [--channel NAME]`: where notifications go (each channel, its last
//! delivery and failures, the subscribed devices), and a test notification through each.

use hyper::Method;
use lazyboy_protocol::{NotifyStatus, NotifyTestRequest, NotifyTestResult};

use crate::cli::NotifyCommand;
use crate::connection::Client;
use crate::render::{self, clean};

pub async fn run(client: &Client, command: NotifyCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        NotifyCommand::Ls => {
            let status: NotifyStatus = client.get("/api/notify").await?;
            if json {
                println!("{}", serde_json::to_string(&status)?);
            } else {
                print!("{}", status_text(&status, render::now_ms()));
            }
            Ok(0)
        }
        NotifyCommand::Test { channel } => {
            let request = NotifyTestRequest { channel };
            let result: NotifyTestResult = client
                .call(Method::POST, "/api/notify/test", Some(&request))
                .await?;
            if json {
                println!("{}", serde_json::to_string(&result)?);
            } else if result.results.is_empty() {
                println!("no channel to test: {}", HOW_TO);
            } else {
                for r in &result.results {
                    let word = if r.ok { "ok  " } else { "FAIL" };
                    println!("{word}  {}: {}", clean(&r.channel), clean(&r.detail));
                }
            }
            Ok(
                if result.results.iter().all(|r| r.ok) && !result.results.is_empty() {
                    0
                } else {
                    1
                },
            )
        }
    }
}

const HOW_TO: &str = "press Notify me in the dashboard, or add [notify.ntfy], [notify.webhook] \
    or [notify.email] to config.toml (see the README)";

/// One line per channel: name, target, kinds, last delivery; then the links' base.
pub fn status_text(status: &NotifyStatus, now_ms: i64) -> String {
    if status.channels.is_empty() {
        return format!("no notification channels: {HOW_TO}\n");
    }
    let mut out = String::new();
    for c in &status.channels {
        let kinds: Vec<&str> = c.kinds.iter().map(|k| k.as_str()).collect();
        let last = match (c.last_at_ms, c.last_ok) {
            (Some(at), Some(ok)) => {
                let ago = (now_ms - at).max(0) / 1000;
                if ok {
                    format!("last sent {ago}s ago")
                } else {
                    format!("last failed {ago}s ago")
                }
            }
            _ => "nothing sent yet".to_owned(),
        };
        out.push_str(&format!(
            "{}  {}  [{}]  {last}",
            clean(&c.channel),
            clean(&c.target),
            kinds.join(",")
        ));
        if c.failures > 0 {
            out.push_str(&format!("  {} given up", c.failures));
        }
        if c.pending > 0 {
            out.push_str(&format!("  {} pending", c.pending));
        }
        out.push('\n');
        if let (Some(false), Some(error)) = (c.last_ok, &c.last_error) {
            out.push_str(&format!("    {}\n", clean(error)));
        }
    }
    out.push_str(&format!("links open {}\n", clean(&status.public_url)));
    out
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::{ChannelStatus, NotifyKind};

    use super::*;

    #[test]
    fn each_channel_says_where_it_goes_and_how_its_last_delivery_went() {
        let status = NotifyStatus {
            channels: vec![
                ChannelStatus {
                    channel: "webhook".into(),
                    target: "https://hooks.example/x".into(),
                    kinds: vec![NotifyKind::Question, NotifyKind::Ended],
                    last_at_ms: Some(10_000),
                    last_ok: Some(false),
                    last_error: Some("HTTP 500".into()),
                    failures: 2,
                    pending: 1,
                },
                ChannelStatus {
                    channel: "ntfy".into(),
                    target: "https://ntfy.sh/t".into(),
                    kinds: vec![NotifyKind::Question],
                    last_at_ms: None,
                    last_ok: None,
                    last_error: None,
                    failures: 0,
                    pending: 0,
                },
            ],
            subscriptions: Vec::new(),
            public_url: "http://127.0.0.1:8787/".into(),
            scanned_seq: 0,
        };
        let text = status_text(&status, 15_000);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "webhook  https://hooks.example/x  [question,ended]  last failed 5s ago  2 given up  \
             1 pending"
        );
        assert_eq!(lines[1], "    HTTP 500");
        assert!(lines[2].ends_with("nothing sent yet"), "{text}");
        assert_eq!(lines[3], "links open http://127.0.0.1:8787/");
    }
}
