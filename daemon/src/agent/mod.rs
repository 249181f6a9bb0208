//! Agents at work: the runtime that schedules and runs tasks, and the turn loop.
//!
//! `Runtime` owns the tasks this daemon runs (one tokio task each, with its own cancellation
//! and pause tokens) and the scheduler (`fleet.rs`): a task starts only once this daemon's
//! node claimed it in the store (a compare-and-set, see `store::claims`), queued tasks
//! oldest first, at most one top-level task per agent across every daemon on the database,
//! at most `max_concurrent_tasks` on this node. Subagents (tasks with a parent) are claimed
//! at once by their parent's node, outside both limits: they are part of their parent's
//! work, and a parent waiting for them must never wait for a slot they need. Every running
//! task holds a lease in the store, renewed by its owner every third of the lease TTL by one
//! timer for all of them; a task whose lease ran out is recovered by whichever daemon claims
//! it next.
//!
//! The loop itself is `turn.rs` (a thin driver over the store, the provider and the tools)
//! over its steps: `batch.rs` (one reply's calls through the task's registry), `approval.rs`
//! (pauses a batch for the person's approval and resumes it with their decision) and
//! `window.rs` (the request fitted to the model's window). The steps share the state in
//! `turn_state.rs` (`Turn`, `Halt`, and what one step hands another), which names none of
//! them, so no step names another. Its decisions are plain functions in `fuse.rs`,
//! `history.rs` and `policy.rs` (approvals, the sandbox). Tools reach their task through
//! `scope.rs`, the runtime's side of `tools::task::TaskScope`.

mod approval;
mod batch;
pub mod doctor;
mod files;
mod fleet;
pub mod fuse;
pub mod history;
mod jobs;
mod person;
pub mod policy;
pub mod prompt;
mod revival;
pub mod schedules;
mod scope;
mod turn;
mod turn_state;
mod window;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures_util::FutureExt;

use lazyboy_protocol::{EventBody, TaskState, ToolStatus, Verdict};
use tokio::sync::{Mutex, Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::config::Config;
pub use files::FileError;
pub use jobs::JobError;
pub use person::{Delivered, MessageError};

use crate::store::{AgentRow, Store, StoreError, TaskRow};
use crate::tools::CommandRegistry;
use crate::tools::commands::{Command, WaitEnd};

/// Why an answer was refused.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("the task is not waiting for an answer (it is {})", .0.as_str())]
    NotWaiting(TaskState),
    #[error("there is no option {0}: the question has {1} options")]
    BadOption(usize, usize),
    #[error("the answer is empty: give a text or an option number")]
    Empty,
    #[error(
        "the task's question is not an approval: answer it with `lazyboy answer` (or \
         POST /api/tasks/{{id}}/answer)"
    )]
    NotApproval,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why an agent was not removed.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error(
        "agent {0} is running task {1}; stop it first, or remove the agent with --force (which \
         stops it)"
    )]
    Busy(String, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A task whose loop is running.
struct Running {
    agent_id: i64,
    agent: String,
    /// Set for a subagent: outside the scheduler's limits, never steered by agent name.
    parent: Option<String>,
    cancel: CancellationToken,
    /// Stops the loop where it is, without a verdict (as a shutdown does): the daemon lost,
    /// or may be about to lose, the task's claim.
    pause: CancellationToken,
    /// Raised when the person sent a new instruction: the loop skips the rest of its batch.
    steered: Arc<AtomicBool>,
}

/// What running tasks share.
pub struct Runtime {
    pub store: Store,
    pub config: Config,
    pub commands: Arc<CommandRegistry>,
    /// The box (the shared desktop in Docker) and its lock.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// Where agents without an explicit workspace work: `<home>/workspaces/<agent>`.
    pub workspaces: PathBuf,
    /// Wakes the schedules' timer (`schedules.rs`) when a schedule changes.
    pub schedules: schedules::Timer,
    /// The web client of `web_fetch` and `web_search`, and the MCP servers (`mcp/`).
    pub web: Arc<crate::web::Web>,
    pub mcp: Arc<crate::mcp::Manager>,
    /// Held while deciding what runs: the scheduler, stops and loop exits all take it.
    running: Mutex<HashMap<String, Running>>,
    wake: Notify,
    /// Bumped whenever a task's loop exits or a running task is steered: loops waiting for
    /// subagents re-check.
    finished: watch::Sender<u64>,
    tracker: TaskTracker,
    /// The daemon's shutdown: loops stop where they are, leaving tasks to resume at the next
    /// start (a shutdown is not a verdict).
    shutdown: CancellationToken,
    /// A restart's first step ([`Runtime::checkpoint`]): nothing new is claimed, and each loop
    /// stops at its next checkpoint (a tool call that runs finishes and records its result
    /// first; a model request is dropped), as a shutdown would stop it.
    drain: CancellationToken,
    /// This process's id in the nodes table (a fresh one per start).
    pub instance: String,
}

impl Runtime {
    pub fn new(
        store: Store,
        config: Config,
        workspaces: PathBuf,
        shutdown: CancellationToken,
    ) -> Arc<Runtime> {
        let sandbox = crate::sandbox::BoxConfig::new(
            config.file.sandbox.name.clone(),
            config.file.sandbox.image.clone(),
        );
        let sandbox = crate::sandbox::Sandbox::new(store.clone(), sandbox, config.heartbeat);
        Arc::new(Runtime {
            web: Arc::new(config.file.web_client()),
            mcp: Arc::new(crate::mcp::Manager::new(&config.file.mcp)),
            sandbox: Arc::new(sandbox),
            store,
            config,
            commands: Arc::new(CommandRegistry::new()),
            workspaces,
            schedules: schedules::Timer::default(),
            running: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            finished: watch::Sender::new(0),
            tracker: TaskTracker::new(),
            shutdown,
            drain: CancellationToken::new(),
            instance: uuid::Uuid::now_v7().to_string(),
        })
    }

    /// This daemon's node name.
    pub fn node(&self) -> &str {
        &self.store.fleet().node
    }

    /// Tells the scheduler that a task was queued.
    pub fn enqueue(&self) {
        self.wake.notify_one();
    }

    /// Records `command_ended` in the task when the background command ends (not at
    /// shutdown: then the next start reports it lost).
    pub fn watch_command(self: &Arc<Self>, task: TaskRow, command: Arc<Command>) {
        let rt = self.clone();
        self.tracker.spawn(async move {
            let year = Duration::from_secs(365 * 24 * 3600);
            loop {
                match command.wait_exit(year, &rt.shutdown).await {
                    WaitEnd::Exited => break,
                    WaitEnd::TimedOut => continue,
                    WaitEnd::Cancelled => return,
                }
            }
            let Some(exit) = command.exit() else { return };
            let body = EventBody::CommandEnded {
                command_id: command.id().to_owned(),
                status: exit.to_string(),
            };
            if let Err(error) = rt.store.append_to_task(&task, &body).await {
                tracing::warn!(%error, "cannot record a command's end");
            }
        });
    }

    /// Kills every process of the task: its commands (their exits say the task was stopped),
    /// then whatever they left, however it detached (its cgroup, see `confine::end_task`).
    pub(crate) fn kill_task_processes(&self, task_id: &str) {
        self.commands.kill_task(task_id);
        crate::confine::end_task(task_id);
    }

    /// Where a task of `agent` works when handed no workspace: the agent's own, else
    /// `<home>/workspaces/<agent>`; created if needed. Used by tasks created through the API,
    /// by messages to an idle agent and by schedules alike; the error names the directory.
    pub fn agent_workspace(&self, agent: &AgentRow) -> std::io::Result<PathBuf> {
        let dir = agent.workspace_in(&self.workspaces);
        std::fs::create_dir_all(&dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        Ok(dir)
    }

    /// A receiver that changes whenever a task's loop exits.
    pub fn finished(&self) -> watch::Receiver<u64> {
        self.finished.subscribe()
    }

    fn spawn(self: &Arc<Self>, running: &mut HashMap<String, Running>, task: TaskRow) {
        let cancel = CancellationToken::new();
        let pause = self.shutdown.child_token();
        let steered = Arc::new(AtomicBool::new(false));
        running.insert(
            task.id.clone(),
            Running {
                agent_id: task.agent_id,
                agent: task.agent.clone(),
                parent: task.parent_id.clone(),
                cancel: cancel.clone(),
                pause: pause.clone(),
                steered: steered.clone(),
            },
        );
        let runtime = self.clone();
        let span = tracing::info_span!("task", task = %task.id, agent = %task.agent);
        self.tracker.spawn(
            async move {
                let id = task.id.clone();
                let row = task.clone();
                // A bug in a tool must not leave the task running forever or its agent stuck.
                let outcome = AssertUnwindSafe(turn::run(&runtime, task, cancel, pause, steered))
                    .catch_unwind()
                    .await;
                if outcome.is_err() {
                    tracing::error!("the task's loop panicked");
                    let message = "internal error: the agent loop crashed; see the daemon log";
                    if let Err(error) = runtime
                        .store
                        .finish_task(&row, Verdict::Failed, message)
                        .await
                    {
                        tracing::error!(%error, "cannot record the failure");
                    }
                    runtime.kill_task_processes(&id);
                    runtime.sandbox.release(&id).await;
                }
                runtime.running.lock().await.remove(&id);
                runtime.finished.send_modify(|n| *n += 1);
                runtime.wake.notify_one();
            }
            .instrument(span),
        );
    }

    /// Stops a task: a running one is cancelled (its loop records `cancelled`), a queued one
    /// or one waiting for the person ends `cancelled` at once, and in every case the commands it started are
    /// killed (a task that ended `waiting` may still have some). `false` if it had already
    /// ended.
    pub async fn stop(&self, task_id: &str) -> Result<bool, StoreError> {
        // A task's subagents are part of its work: they stop with it.
        for child in self.store.subagents(task_id).await? {
            if !child.state().is_final() {
                Box::pin(self.stop(&child.id)).await?;
            }
        }
        let running = self.running.lock().await;
        self.kill_task_processes(task_id);
        if let Some(task) = running.get(task_id) {
            task.cancel.cancel();
            return Ok(true);
        }
        let task = self.store.task(task_id).await?;
        match task.state() {
            TaskState::Queued => {
                let ended = self
                    .store
                    .end_task(
                        &task,
                        TaskState::Queued,
                        Verdict::Cancelled,
                        "stopped before it started",
                    )
                    .await;
                match ended {
                    Ok(()) => Ok(true),
                    // Another daemon claimed it meanwhile: its owner stops it.
                    Err(StoreError::Changed { .. }) => self.store.request_stop(task_id).await,
                    Err(error) => Err(error),
                }
            }
            // No loop runs for it: it ends now, its question answered by the stop.
            TaskState::WaitingForHuman => {
                let events = self.store.task_history(task_id).await?;
                let history = history::History::from_events(events.iter().map(|(_, b)| b));
                for call in &history.unanswered {
                    let result = EventBody::ToolResult {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        status: ToolStatus::Error,
                        output: "not answered: the person stopped the task".to_owned(),
                        progress: false,
                    };
                    self.store.append_to_task(&task, &result).await?;
                }
                self.store
                    .end_task(
                        &task,
                        TaskState::WaitingForHuman,
                        Verdict::Cancelled,
                        "stopped by the person",
                    )
                    .await?;
                Ok(true)
            }
            // Another daemon runs it: its owner sees the request when it renews the lease.
            TaskState::Running | TaskState::Recovering => self.store.request_stop(task_id).await,
            _ => Ok(false),
        }
    }

    /// Removes an agent. Refused while one of its tasks runs unless `force`, which stops it
    /// first; its queued and waiting tasks end `cancelled` (they would have no agent).
    pub async fn remove_agent(&self, name: &str, force: bool) -> Result<(), RemoveError> {
        let agent = self.store.agent(name).await?;
        let open = self
            .store
            .list_tasks(Some(name), None, u32::MAX)
            .await?
            .into_iter()
            .filter(|t| !t.state().is_final())
            .collect::<Vec<_>>();
        let busy = open.iter().find(|t| {
            matches!(t.state(), TaskState::Running | TaskState::Recovering) && t.parent_id.is_none()
        });
        if let (Some(task), false) = (busy, force) {
            return Err(RemoveError::Busy(agent.name, task.id.clone()));
        }
        let mut finished = self.finished();
        for task in &open {
            self.stop(&task.id).await?;
        }
        // Running loops record their own `cancelled`; wait for them (bounded), here and on
        // other daemons (which see the stop when they renew their leases: within a third of
        // the lease TTL; their ends bump `finished` through the fleet watcher).
        let deadline = tokio::time::Instant::now()
            + Duration::from_secs(10)
            + Duration::from_millis(self.renew_every_ms());
        loop {
            let here = self
                .running
                .lock()
                .await
                .values()
                .any(|r| r.agent_id == agent.id);
            let elsewhere = !here
                && self
                    .store
                    .list_tasks(Some(name), None, u32::MAX)
                    .await?
                    .iter()
                    .any(|t| matches!(t.state(), TaskState::Running | TaskState::Recovering));
            if !here && !elsewhere {
                break;
            }
            if tokio::time::timeout_at(deadline, finished.changed())
                .await
                .is_err()
            {
                tracing::warn!(agent = name, "removing the agent while a loop still stops");
                break;
            }
        }
        for task in self.store.list_tasks(Some(name), None, u32::MAX).await? {
            let state = task.state();
            if state.is_final() {
                continue;
            }
            let guard_owner = matches!(state, TaskState::Running | TaskState::Recovering);
            let ended = if guard_owner {
                // Left running by a loop that is gone (ours): its claim is still ours.
                self.store
                    .finish_task(&task, Verdict::Cancelled, "the agent was removed")
                    .await
            } else {
                self.store
                    .end_task(&task, state, Verdict::Cancelled, "the agent was removed")
                    .await
            };
            match ended {
                Ok(()) | Err(StoreError::Changed { .. } | StoreError::NotOwner(_)) => {}
                Err(error) => return Err(error.into()),
            }
        }
        self.store.delete_agent(name).await?;
        Ok(())
    }

    /// Whether a restart asked the loops to stop at their next checkpoint.
    pub fn draining(&self) -> bool {
        self.drain.is_cancelled()
    }

    /// How many task loops run here now.
    pub async fn running_count(&self) -> usize {
        self.running.lock().await.len()
    }

    /// The first step of a restart (`lazyboy daemon restart`): claims nothing more and lets
    /// every loop reach its next checkpoint (the tool call it runs finishes and records its
    /// result; then it stops, without a verdict, as at a shutdown), waiting at most `within`.
    /// Returns how many loops were still running then; the shutdown that follows stops them
    /// where they are (their calls in flight are `unknown` at the next start).
    pub async fn checkpoint(&self, within: Duration) -> usize {
        self.drain.cancel();
        let deadline = tokio::time::Instant::now() + within;
        let mut finished = self.finished.subscribe();
        loop {
            let left = self.running_count().await;
            if left == 0 {
                return 0;
            }
            tokio::select! {
                changed = finished.changed() => if changed.is_err() { return left },
                () = tokio::time::sleep_until(deadline) => return self.running_count().await,
                () = self.shutdown.cancelled() => return self.running_count().await,
            }
        }
    }

    /// A restart's stop: [`Runtime::checkpoint`], then the daemon's shutdown.
    pub fn stop_after_checkpoint(self: &Arc<Self>, within: Duration) {
        let runtime = self.clone();
        self.tracker.spawn(async move {
            let left = runtime.checkpoint(within).await;
            if left > 0 {
                tracing::warn!(
                    left,
                    "tasks did not reach a checkpoint in time; stopping them where they are"
                );
            }
            runtime.shutdown.cancel();
        });
    }

    /// Stops every loop (without a verdict) and waits for them, then kills their commands.
    pub async fn shutdown(&self) {
        self.tracker.close();
        self.tracker.wait().await;
        self.commands.kill_all();
        // What the commands left, detached or not.
        crate::confine::end_all();
        self.mcp.shutdown().await;
    }
}
