//! `lazyboy ask`, `tasks`, `follow`, `stop`: background tasks.

use hyper::Method;
use lazyboy_protocol::{CreateTask, Task, TaskAccepted, TaskList};

use crate::connection::Client;

pub async fn ask(
    client: &Client,
    agent: &str,
    objective: &str,
    workspace: Option<std::path::PathBuf>,
    json: bool,
) -> anyhow::Result<i32> {
    let workspace = match workspace {
        Some(dir) => Some(dir.canonicalize()?.display().to_string()),
        None => None,
    };
    let request = CreateTask {
        objective: objective.to_owned(),
        workspace,
    };
    let accepted: TaskAccepted = client
        .call(
            Method::POST,
            &format!("/api/agents/{agent}/tasks"),
            Some(&request),
        )
        .await?;
    if json {
        println!("{}", serde_json::to_string(&accepted)?);
    } else {
        println!("{}", accepted.task);
    }
    Ok(0)
}

pub async fn list(
    client: &Client,
    agent: Option<&str>,
    state: Option<&str>,
    json: bool,
) -> anyhow::Result<i32> {
    let mut query = Vec::new();
    if let Some(agent) = agent {
        query.push(format!("agent={agent}"));
    }
    if let Some(state) = state {
        query.push(format!("state={state}"));
    }
    let list: TaskList = client
        .get(&format!("/api/tasks?{}", query.join("&")))
        .await?;
    if json {
        println!("{}", serde_json::to_string(&list)?);
        return Ok(0);
    }
    println!(
        "{:<36}  {:<12}  {:<17}  {:<14}  OBJECTIVE",
        "TASK", "AGENT", "STATE", "TOKENS"
    );
    for task in &list.tasks {
        let mark = if task.usage.estimated { "~" } else { "" };
        let spent = format!(
            "{mark}{}/{}",
            crate::render::tokens(task.usage.input_tokens),
            crate::render::tokens(task.usage.output_tokens)
        );
        println!(
            "{:<36}  {:<12}  {:<17}  {:<14}  {}",
            task.id,
            task.agent,
            state_label(task),
            spent,
            match &task.parent {
                Some(parent) => format!(
                    "(subagent of {parent}) {}",
                    crate::render::one_line(&task.objective)
                ),
                None => crate::render::one_line(&task.objective),
            }
        );
    }
    Ok(0)
}

fn state_label(task: &Task) -> String {
    match task.verdict {
        Some(verdict) if task.state.is_final() => serde_json::to_value(verdict)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| task.state.as_str().to_owned()),
        _ => task.state.as_str().to_owned(),
    }
}

pub async fn stop(client: &Client, task: &str, json: bool) -> anyhow::Result<i32> {
    let after: Task = client
        .call(
            Method::POST,
            &format!("/api/tasks/{task}/stop"),
            None::<&()>,
        )
        .await?;
    if json {
        println!("{}", serde_json::to_string(&after)?);
    } else {
        println!("stopping {task} (was {})", after.state.as_str());
    }
    Ok(0)
}

/// Follows an existing task to its verdict (the same view as `lazyboy run`).
pub async fn follow(client: &Client, task: &str, json: bool) -> anyhow::Result<i32> {
    let info: Task = client.get(&format!("/api/tasks/{task}")).await?;
    crate::commands::run::follow(client, &info.id, json, None).await
}

pub async fn answer(
    client: &Client,
    task: &str,
    text: Option<String>,
    option: Option<usize>,
    json: bool,
) -> anyhow::Result<i32> {
    let request = lazyboy_protocol::AnswerTask { text, option };
    let after: Task = client
        .call(
            Method::POST,
            &format!("/api/tasks/{task}/answer"),
            Some(&request),
        )
        .await?;
    if json {
        println!("{}", serde_json::to_string(&after)?);
    } else {
        println!("answered; {task} continues");
    }
    Ok(0)
}

pub async fn continue_task(client: &Client, task: &str, json: bool) -> anyhow::Result<i32> {
    let after: Task = client
        .call(
            Method::POST,
            &format!("/api/tasks/{task}/continue"),
            None::<&()>,
        )
        .await?;
    if json {
        println!("{}", serde_json::to_string(&after)?);
    } else {
        println!("{task} continues (lazyboy follow {task})");
    }
    Ok(0)
}
