//! `lazyboy run "objective"` and the REPL: create a task, follow its events, exit with the
//! verdict's code.
//!
//! The task lives in the daemon: this process only watches. Closing the terminal leaves it
//! running; Ctrl-C asks the daemon to stop it (a second Ctrl-C leaves at once). If the stream
//! drops (say the daemon restarts) it reconnects and resumes after the last event seen.
//!
//! One stdin reader serves the whole session (terminal or pipe): a line typed while the task's
//! question is open answers it; any other line goes to the agent as a message, and the daemon
//! decides what it does (steers the running task, answers, or starts one) and says so; `/stop`
//! stops the task. In the REPL, a line typed while no task is followed starts one.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;
use hyper::Method;
use lazyboy_protocol::{CreateTask, EventBody, TaskAccepted};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::cli::RunArgs;
use crate::connection::{Client, ClientError};
use crate::render::TaskPrinter;

pub async fn run(client: &Client, args: RunArgs, json: bool) -> anyhow::Result<i32> {
    let workspace = match args.workspace {
        Some(dir) => dir,
        None => std::env::current_dir().context("no current directory")?,
    };
    // Started before the task exists, so nothing typed from here on is lost.
    let mut input = stdin_lines();
    let task = create(client, &args.agent, &args.objective, workspace).await?;
    state_boundaries(client, &args.agent).await?;
    follow(client, &task, json, Some(&mut input)).await
}

/// Says on stderr, at the start, what waits for the person's approval (answered at this
/// prompt). The sandbox is not repeated on every run: every agent is confined to its
/// workspace unless the person chose otherwise, which `lazyboy doctor`, `team show` and the
/// README say.
async fn state_boundaries(client: &Client, agent: &str) -> anyhow::Result<()> {
    let info: lazyboy_protocol::Agent = client.get(&format!("/api/agents/{agent}")).await?;
    if !info.approve.is_empty() {
        let effects: Vec<&str> = info.approve.iter().map(|e| e.as_str()).collect();
        eprintln!(
            "(approvals: {} calls wait for you; answer 1, 2 or 3 here)",
            effects.join(", ")
        );
    }
    Ok(())
}

/// Creates a task for `agent` working in `workspace`.
pub async fn create(
    client: &Client,
    agent: &str,
    objective: &str,
    workspace: PathBuf,
) -> anyhow::Result<String> {
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("cannot use {} as the workspace", workspace.display()))?;
    let request = CreateTask {
        objective: objective.to_owned(),
        workspace: Some(workspace.display().to_string()),
    };
    let accepted: TaskAccepted = client
        .call(
            Method::POST,
            &format!("/api/agents/{agent}/tasks"),
            Some(&request),
        )
        .await?;
    Ok(accepted.task)
}

/// Follows a task until its verdict. Lines from `input` (the one stdin reader) answer its
/// question, go to its agent as messages, or (`/stop`) stop it. If the daemon dies meanwhile,
/// it is started again (its recovery resumes the task) and the stream resumes after the last
/// event seen.
pub async fn follow(
    client: &Client,
    task: &str,
    json: bool,
    mut input: Option<&mut mpsc::UnboundedReceiver<String>>,
) -> anyhow::Result<i32> {
    let mut interrupts = signal(SignalKind::interrupt()).context("cannot watch Ctrl-C")?;
    // The open question, if the task is waiting for the person: its options.
    let mut question: Option<Vec<String>> = None;
    let mut stopping = false;
    let mut printer = TaskPrinter::new(json);
    let mut last = 0;
    let path = format!("/api/tasks/{task}/events");
    let mut pause = Duration::from_millis(50);
    loop {
        let stream = match client.events(&path, last).await {
            Ok(stream) => stream,
            Err(ClientError::NotRunning { .. }) => {
                crate::daemon_proc::ensure_running(client).await?;
                continue;
            }
            Err(ClientError::Io { .. } | ClientError::Http(_)) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
                continue;
            }
            Err(other) => return Err(other.into()),
        };
        pause = Duration::from_millis(50);
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                event = stream.next() => {
                    let Some(Ok(event)) = event else { break };
                    if event.seq <= last {
                        continue;
                    }
                    last = event.seq;
                    let mut out = std::io::stdout().lock();
                    printer.print(&mut out, &event)?;
                    out.flush()?;
                    match event.body() {
                        Some(EventBody::TaskFinished { verdict, .. }) => {
                            // A continued task has several turns: only the last one ends it.
                            // Its row changes in the same transaction as its last
                            // `task_finished` (stamped after the row), so an earlier turn's
                            // verdict is older than the row and the replay goes on.
                            let now: lazyboy_protocol::Task =
                                client.get(&format!("/api/tasks/{task}")).await?;
                            if now.state.is_final() && event.at_ms >= now.updated_at_ms {
                                return Ok(now.verdict.unwrap_or(verdict).exit_code());
                            }
                        }
                        Some(EventBody::Question { options, .. }) => question = Some(options),
                        Some(
                            EventBody::ToolResult { .. } | EventBody::ApprovalDecided { .. },
                        ) => question = None,
                        _ => {}
                    }
                }
                _ = interrupts.recv() => {
                    if stopping {
                        return Ok(130);
                    }
                    stopping = true;
                    eprintln!("\nstopping the task (Ctrl-C again to exit without waiting)");
                    stop(client, task).await?;
                }
                line = next_line(&mut input) => match line {
                    Some(line) if line.trim() == "/stop" => stop(client, task).await?,
                    Some(line) if !line.trim().is_empty() => {
                        // A line the daemon refused (a bad option, say) must not end the run.
                        if let Err(error) = typed(client, task, &mut question, line.trim()).await {
                            eprintln!("lazyboy: {error:#}");
                        }
                    }
                    Some(_) => {}
                    None => input = None,
                },
            }
        }
    }
}

/// A line typed while following `task`: the answer to its open question (an option's number
/// or free text), else a message to its agent; what it did is said on stderr, so stdout stays
/// the task's own output.
async fn typed(
    client: &Client,
    task: &str,
    question: &mut Option<Vec<String>>,
    line: &str,
) -> anyhow::Result<()> {
    if let Some(options) = question.as_ref() {
        let option = line
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=options.len()).contains(n));
        let answer = lazyboy_protocol::AnswerTask {
            text: option.is_none().then(|| line.to_owned()),
            option,
        };
        client
            .call::<serde_json::Value>(
                Method::POST,
                &format!("/api/tasks/{task}/answer"),
                Some(&answer),
            )
            .await?;
        *question = None;
        eprintln!("(answered {task}'s question)");
        return Ok(());
    }
    let info: lazyboy_protocol::Task = client.get(&format!("/api/tasks/{task}")).await?;
    let accepted = crate::commands::tell::send(client, &info.agent, line, false).await?;
    eprintln!(
        "({})",
        crate::commands::tell::describe(&info.agent, &accepted)
    );
    Ok(())
}

async fn next_line(input: &mut Option<&mut mpsc::UnboundedReceiver<String>>) -> Option<String> {
    match input {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn stop(client: &Client, task: &str) -> anyhow::Result<()> {
    client
        .call::<serde_json::Value>(
            Method::POST,
            &format!("/api/tasks/{task}/stop"),
            None::<&()>,
        )
        .await?;
    Ok(())
}

/// `lazyboy` with no command: one stdin reader; a line while idle starts a task (default
/// agent, current directory); while a task runs, lines go to it as in [`follow`].
pub async fn repl(client: &Client, json: bool) -> anyhow::Result<i32> {
    let mut rx = stdin_lines();
    let agent = "default";
    let mut code = 0;
    eprintln!(
        "lazyboy: type a task and press Enter; while it runs, a line steers it (or answers its \
         question); /stop stops it; Ctrl-D quits"
    );
    while let Some(line) = rx.recv().await {
        let line = line.trim().to_owned();
        match line.as_str() {
            "" | "/stop" => continue,
            "/quit" | "/exit" => break,
            _ => {}
        }
        let workspace = std::env::current_dir().context("no current directory")?;
        let task = create(client, agent, &line, workspace).await?;
        code = follow(client, &task, json, Some(&mut rx)).await?;
    }
    Ok(code)
}

/// The one stdin reader: lines, on a channel.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}
