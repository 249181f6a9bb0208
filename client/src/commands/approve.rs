//! `lazyboy approve TASK [--for-task]` and `lazyboy deny TASK [REASON]`: the person's decision
//! on the call a task waits on. The daemon refuses (409) when the task's question is not an
//! approval, so neither verb ever picks an option of an ordinary question.
//! `lazyboy approve --show TASK` decides nothing: it prints the whole call, as the prompt does
//! but without its limits.

use hyper::Method;
use lazyboy_protocol::{ApproveCall, DashboardState, DenyCall, Task};

use crate::approval::{self, Extent, Style};
use crate::connection::Client;

/// Prints everything the call `task` waits on would do (the open questions of `/api/state`).
pub async fn show(client: &Client, task: &str, json: bool) -> anyhow::Result<i32> {
    let state: DashboardState = client.get("/api/state").await?;
    let Some(approval) = state
        .questions
        .into_iter()
        .find(|q| q.task == task)
        .and_then(|q| q.approval)
    else {
        anyhow::bail!("{task} waits on no approval");
    };
    if json {
        println!("{}", serde_json::to_string(&approval)?);
        return Ok(0);
    }
    use std::io::IsTerminal;
    let style = Style {
        color: std::io::stdout().is_terminal(),
    };
    println!("{}", approval::title(&approval));
    print!(
        "{}",
        approval::details(&approval, task, Extent::Full, style)
    );
    println!("(lazyboy approve {task} [--for-task] | lazyboy deny {task} \"why\")");
    Ok(0)
}

pub async fn approve(
    client: &Client,
    task: &str,
    for_task: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let after: Task = client
        .call(
            Method::POST,
            &format!("/api/tasks/{task}/approve"),
            Some(&ApproveCall { for_task }),
        )
        .await?;
    if json {
        println!("{}", serde_json::to_string(&after)?);
    } else if for_task {
        println!("approved, and the same call for the rest of {task}; it continues");
    } else {
        println!("approved; {task} continues");
    }
    Ok(0)
}

pub async fn deny(
    client: &Client,
    task: &str,
    reason: Option<String>,
    json: bool,
) -> anyhow::Result<i32> {
    let after: Task = client
        .call(
            Method::POST,
            &format!("/api/tasks/{task}/deny"),
            Some(&DenyCall { reason }),
        )
        .await?;
    if json {
        println!("{}", serde_json::to_string(&after)?);
    } else {
        println!("denied; {task} continues without it");
    }
    Ok(0)
}
