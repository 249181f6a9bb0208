//! `lazyboy run "objective"` and the REPL: create a task, follow its events, exit with the
//! verdict's code.
//!
//! The task lives in the daemon: this process only watches. Closing the terminal leaves it
//! running; Ctrl-C asks the daemon to stop it (a second Ctrl-C leaves at once). If the stream
//! drops (say the daemon restarts) it reconnects and resumes after the last event seen.

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
    let task = create(client, &args.agent, &args.objective, workspace).await?;
    // At a terminal, questions can be answered right here.
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let mut input = stdin_lines();
        follow(client, &task, json, Some(&mut input)).await
    } else {
        follow(client, &task, json, None).await
    }
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

/// Follows a task until its verdict. A `/stop` line from `input` (the REPL's stdin) stops
/// it. If the daemon dies meanwhile, it is started again (its recovery resumes the task) and
/// the stream resumes after the last event seen.
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
                        Some(EventBody::ToolResult { .. }) => question = None,
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
                    Some(line) if !line.trim().is_empty() => match &question {
                        Some(options) => {
                            let line = line.trim();
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
                            question = None;
                        }
                        None => eprintln!(
                            "(a task is running: /stop stops it; type the next task when it ends)"
                        ),
                    },
                    Some(_) => {}
                    None => input = None,
                },
            }
        }
    }
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
/// agent, current directory); while a task runs, `/stop` stops it.
pub async fn repl(client: &Client, json: bool) -> anyhow::Result<i32> {
    let mut rx = stdin_lines();
    let agent = "default";
    let mut code = 0;
    eprintln!("lazyboy: type a task and press Enter; /stop stops it; Ctrl-D quits");
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
