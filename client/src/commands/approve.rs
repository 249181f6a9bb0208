//! `lazyboy approve TASK [--for-task]` and `lazyboy deny TASK [REASON]`: the person's decision
//! on the call a task waits on. The daemon refuses (409) when the task's question is not an
//! approval, so neither verb ever picks an option of an ordinary question.

use hyper::Method;
use lazyboy_protocol::{ApproveCall, DenyCall, Task};

use crate::connection::Client;

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
