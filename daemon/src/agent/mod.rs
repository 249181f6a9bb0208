//! Agents at work: the runtime that runs tasks, and the turn loop.
//!
//! `Runtime` owns the running tasks (one tokio task each, with its own cancellation token)
//! and starts, stops and recovers them. The loop itself is `turn.rs` (a thin driver over
//! the store, the provider and the tools); its decisions are plain functions in `fuse.rs`,
//! `control.rs` and `history.rs`.

pub mod control;
pub mod fuse;
pub mod history;
pub mod prompt;
mod turn;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lazyboy_protocol::TaskState;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::config::Config;
use crate::store::{Store, StoreError, TaskRow};
use crate::tools::{CommandRegistry, Registry};

/// What running tasks share.
pub struct Runtime {
    pub store: Store,
    pub config: Config,
    pub tools: Registry,
    pub commands: Arc<CommandRegistry>,
    /// Where agents without an explicit workspace work: `<home>/workspaces/<agent>`.
    pub workspaces: PathBuf,
    running: Mutex<HashMap<String, CancellationToken>>,
    tracker: TaskTracker,
    /// The daemon's shutdown: loops stop where they are, leaving tasks to resume at the next
    /// start (a shutdown is not a verdict).
    shutdown: CancellationToken,
}

impl Runtime {
    pub fn new(
        store: Store,
        config: Config,
        workspaces: PathBuf,
        shutdown: CancellationToken,
    ) -> Arc<Runtime> {
        Arc::new(Runtime {
            store,
            config,
            tools: Registry::standard(),
            commands: Arc::new(CommandRegistry::new()),
            workspaces,
            running: Mutex::new(HashMap::new()),
            tracker: TaskTracker::new(),
            shutdown,
        })
    }

    /// Starts the loop of `task` unless it already runs.
    pub fn start(self: &Arc<Self>, task: TaskRow) {
        let cancel = CancellationToken::new();
        {
            let Ok(mut running) = self.running.lock() else {
                return;
            };
            if running.contains_key(&task.id) {
                return;
            }
            running.insert(task.id.clone(), cancel.clone());
        }
        let runtime = self.clone();
        let span = tracing::info_span!("task", task = %task.id, agent = %task.agent);
        self.tracker.spawn(
            async move {
                let id = task.id.clone();
                turn::run(&runtime, task, cancel).await;
                if let Ok(mut running) = runtime.running.lock() {
                    running.remove(&id);
                }
            }
            .instrument(span),
        );
    }

    /// Cancels a running task; `false` if it was not running.
    pub fn stop(&self, task_id: &str) -> bool {
        let token = self
            .running
            .lock()
            .ok()
            .and_then(|running| running.get(task_id).cloned());
        match token {
            Some(token) => {
                token.cancel();
                self.commands.kill_task(task_id);
                true
            }
            None => false,
        }
    }

    /// At start: every task that was running or recovering when the daemon died resumes
    /// from its checkpoint (the loop marks in-flight calls `unknown`); queued ones start.
    pub async fn recover(self: &Arc<Self>) -> Result<usize, StoreError> {
        let tasks = self
            .store
            .tasks_in(&[TaskState::Running, TaskState::Recovering, TaskState::Queued])
            .await?;
        let count = tasks.len();
        for task in tasks {
            if task.state() != TaskState::Queued {
                self.store
                    .set_task_state(&task, TaskState::Recovering)
                    .await?;
            }
            self.start(task);
        }
        Ok(count)
    }

    /// Stops every loop (without a verdict) and waits for them, then kills their commands.
    pub async fn shutdown(&self) {
        self.tracker.close();
        self.tracker.wait().await;
        self.commands.kill_all();
    }
}
