//! `lazyboy events [--agent NAME] [--after N] [--follow]`.
//!
//! Without `--follow`, prints the log up to the newest event and exits. With it, keeps the
//! stream open; when the connection drops (say the daemon restarts) it reconnects and resumes
//! after the last seq it printed, so no event is printed twice or skipped.

use std::io::Write;
use std::time::Duration;

use futures_util::StreamExt;
use lazyboy_protocol::EventPage;

use crate::cli::EventsArgs;
use crate::connection::{Client, ClientError};
use crate::render;

pub async fn run(client: &Client, args: EventsArgs, json: bool) -> anyhow::Result<i32> {
    let mut last = args.after;
    let agent = args.agent.as_deref();
    if !args.follow {
        loop {
            let page: EventPage = client.get(&page_path(agent, last)).await?;
            let Some(newest) = page.events.last().map(|e| e.seq) else {
                return Ok(0);
            };
            let mut out = std::io::stdout().lock();
            for event in &page.events {
                print_event(&mut out, event, json)?;
            }
            last = newest;
        }
    }
    let path = match agent {
        Some(name) => format!("/api/agents/{name}/events"),
        None => "/api/events".to_owned(),
    };
    let mut pause = Duration::from_millis(50);
    loop {
        match client.events(&path, last).await {
            Ok(stream) => {
                pause = Duration::from_millis(50);
                let mut stream = std::pin::pin!(stream);
                while let Some(event) = stream.next().await {
                    let Ok(event) = event else { break };
                    if event.seq <= last {
                        continue;
                    }
                    print_event(&mut std::io::stdout().lock(), &event, json)?;
                    last = event.seq;
                }
            }
            // The daemon is restarting or gone for now: keep trying.
            Err(ClientError::NotRunning { .. } | ClientError::Io { .. } | ClientError::Http(_)) => {
            }
            Err(other) => return Err(other.into()),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

fn page_path(agent: Option<&str>, after: i64) -> String {
    match agent {
        Some(name) => format!("/api/events/page?after={after}&agent={name}"),
        None => format!("/api/events/page?after={after}"),
    }
}

fn print_event(
    out: &mut impl Write,
    event: &lazyboy_protocol::Event,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string(event)?)?;
    } else {
        writeln!(out, "{}", render::event_line(event))?;
    }
    out.flush()?;
    Ok(())
}
