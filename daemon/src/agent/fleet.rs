//! The runtime's side of the claim protocol (`store::claims`): this daemon's node, the
//! scheduler that claims queued tasks, the lease timer, recovery, and the watcher that wakes
//! them when another daemon changes the queue.
//!
//! - At start the node registers (a name held by a live process is refused at once: a
//!   `lazyboyd` with the holder's pid runs here, or its heartbeat moves; one left by a daemon
//!   killed with `-9` is waited out, at most a lease, saying so), then claims what no live loop
//!   holds: its own tasks from before the restart and any whose lease ran out (all of them
//!   on SQLite, whose home lock proves every other owner dead), and resumes them.
//! - The scheduler (woken by a `Notify`, never on a tick) claims queued subagents of its own
//!   tasks, then queued top-level tasks one claim at a time while this node has room. The
//!   per-agent rule and the capacity are conditions of the claim itself, so they hold across
//!   daemons; the in-memory map only says what runs here.
//! - Every third of the lease TTL one timer renews the leases of the tasks running here (the
//!   store renews only rows this node owns), beats the node's heartbeat, recovers expired
//!   tasks of other nodes, and wakes the scheduler. A task the renewal did not renew was
//!   lost (another daemon took it over after its lease ran out): its loop is paused where it
//!   is, with no verdict, and its writes would be refused anyway. If renewals keep failing
//!   (the database is unreachable) for two thirds of a lease, every loop is paused before
//!   its lease can run out under it. A stop asked for on another daemon is seen here and
//!   cancels the loop.
//! - On a shared database (not SQLite) the watcher follows the bus for other daemons' task
//!   and schedule events, and wakes the scheduler, the schedules' timer and loops waiting for
//!   tasks to end.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use super::{Running, Runtime, schedules};
use crate::store::{NodeHolder, Renewal, StoreError, Topic};

impl Runtime {
    /// How often leases are renewed: a third of their TTL.
    pub(super) fn renew_every_ms(&self) -> u64 {
        u64::try_from(self.store.fleet().lease_ttl_ms / 3)
            .unwrap_or(0)
            .max(50)
    }

    /// At start, once [`Runtime::register`] took the node's name: resumes the tasks no live
    /// loop holds (the loop marks in-flight calls `unknown`), then starts the scheduler, the
    /// lease timer, the schedules' timer (running missed slots once) and, on a shared
    /// database, the watcher. Returns how many tasks resumed.
    pub async fn start(self: &Arc<Self>) -> Result<usize, StoreError> {
        // Before any task resumes: who held the box survives, dead holders do not.
        self.sandbox.recover().await?;
        let resumed = self.recover().await?;
        let runtime = self.clone();
        self.tracker.spawn(async move { runtime.schedule().await });
        let runtime = self.clone();
        self.tracker.spawn(async move { runtime.renew().await });
        self.tracker.spawn(schedules::run(self.clone()));
        if !self.store.exclusive() {
            let runtime = self.clone();
            self.tracker.spawn(async move { runtime.watch().await });
        }
        Ok(resumed)
    }

    /// Records this daemon as its node. A name held by another process is refused at once
    /// when that process is alive (a `lazyboyd` with its pid runs on this machine, or its
    /// heartbeat moves while we look); otherwise it may be a daemon killed with `-9`, whose
    /// heartbeat stays fresh for up to a lease: that is waited out (saying so, with the time
    /// limit), and refused if it comes back to life meanwhile.
    pub async fn register(&self, url: &str) -> Result<(), StoreError> {
        let ttl =
            Duration::from_millis(u64::try_from(self.store.fleet().lease_ttl_ms).unwrap_or(0));
        let limit = ttl + Duration::from_millis(self.renew_every_ms());
        let deadline = Instant::now() + limit;
        // Polled faster than the holder renews, so a live one shows within one renewal.
        let poll = Duration::from_millis((self.renew_every_ms() / 4).clamp(25, 1000));
        let mut first: Option<NodeHolder> = None;
        loop {
            let registered = self
                .store
                .register_node(&self.instance, std::process::id(), url, crate::VERSION)
                .await;
            let holder = match registered {
                Err(StoreError::NodeInUse(holder)) => holder,
                other => return other,
            };
            let moved = first.as_ref().is_some_and(|seen| *seen != holder);
            if moved || alive_here(&holder) || Instant::now() >= deadline {
                return Err(StoreError::NodeInUse(holder));
            }
            if first.is_none() {
                crate::telemetry::progress(&format!(
                    "the node name {:?} is held by pid {} ({}), whose heartbeat is fresh: \
                     waiting up to {} s for it to go stale, as a daemon killed with -9 leaves \
                     it; if that daemon is alive, give this one another name with --node",
                    holder.name,
                    holder.pid,
                    holder.url,
                    limit.as_secs().max(1)
                ));
                first = Some(holder);
            }
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = self.shutdown.cancelled() => return Ok(()),
            }
        }
    }

    /// Claims the running tasks no live loop holds (this node's own from before a restart,
    /// and any whose lease ran out) as `recovering`, within this node's capacity, and starts
    /// their loops. Returns how many.
    async fn recover(self: &Arc<Self>) -> Result<usize, StoreError> {
        let mut running = self.running.lock().await;
        if self.shutdown.is_cancelled() || self.draining() {
            return Ok(0);
        }
        let here: Vec<String> = running.keys().cloned().collect();
        let claimed = self
            .store
            .claim_expired(self.config.max_concurrent_tasks, &here)
            .await?;
        let count = claimed.len();
        for task in claimed {
            tracing::info!(task = %task.id, agent = %task.agent, "recovering the task");
            self.spawn(&mut running, task);
        }
        Ok(count)
    }

    /// The scheduler loop.
    async fn schedule(self: Arc<Self>) {
        loop {
            if let Err(error) = self.fill().await {
                tracing::error!(%error, "scheduler: cannot claim from the queue");
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = self.shutdown.cancelled() => return,
            }
        }
    }

    /// Claims and starts queued tasks while this node has room.
    pub(super) async fn fill(self: &Arc<Self>) -> Result<(), StoreError> {
        let limit = self.config.max_concurrent_tasks;
        let mut running = self.running.lock().await;
        // A restart is draining: what is queued waits for the next daemon.
        if self.shutdown.is_cancelled() || self.draining() {
            return Ok(());
        }
        for task in self.store.claim_subagents().await? {
            self.spawn(&mut running, task);
        }
        while top_level(&running) < limit {
            let Some(task) = self.store.claim_next(limit).await? else {
                break;
            };
            self.spawn(&mut running, task);
        }
        Ok(())
    }

    /// The lease timer; returns at shutdown.
    async fn renew(self: Arc<Self>) {
        let every = Duration::from_millis(self.renew_every_ms());
        let ttl = every * 3;
        let mut tick = crate::bus::idle_interval(every);
        let mut renewed_at = Instant::now();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = self.shutdown.cancelled() => return,
            }
            let ids: Vec<String> = self.running.lock().await.keys().cloned().collect();
            match self.store.renew(&ids).await {
                Ok(renewal) => {
                    renewed_at = Instant::now();
                    self.apply(&ids, &renewal).await;
                }
                Err(error) => {
                    tracing::error!(%error, "cannot renew the leases of running tasks");
                    if renewed_at.elapsed() > ttl * 2 / 3 {
                        tracing::error!("no renewal for two thirds of a lease: pausing every task");
                        for run in self.running.lock().await.values() {
                            run.pause.cancel();
                        }
                    }
                }
            }
            if let Err(error) = self.store.node_heartbeat(&self.instance).await {
                tracing::warn!(%error, "cannot renew the node's heartbeat");
            }
            if let Err(error) = self.recover().await {
                tracing::error!(%error, "cannot recover tasks whose lease ran out");
            }
            self.wake.notify_one();
        }
    }

    /// Acts on a renewal of `asked`: lost tasks pause, stops asked for elsewhere cancel.
    async fn apply(&self, asked: &[String], renewal: &Renewal) {
        let running = self.running.lock().await;
        for id in asked.iter().filter(|id| !renewal.renewed.contains(id)) {
            if let Some(run) = running.get(id) {
                tracing::warn!(task = %id, "lost the task's claim (its lease ran out); pausing it");
                run.pause.cancel();
            }
        }
        for id in &renewal.stop {
            if let Some(run) = running.get(id) {
                tracing::info!(task = %id, "a stop was asked for on another daemon");
                self.kill_task_processes(id);
                run.cancel.cancel();
            }
        }
    }

    /// Follows the bus for other daemons' changes to tasks and schedules.
    async fn watch(self: Arc<Self>) {
        let mut rx = self.store.bus().subscribe();
        loop {
            let event = tokio::select! {
                () = self.shutdown.cancelled() => return,
                received = rx.recv() => received,
            };
            match event {
                Ok(event) => match event.topic {
                    Topic::Task => {
                        self.wake.notify_one();
                        let here = match &event.task {
                            Some(task) => self.running.lock().await.contains_key(&**task),
                            None => true,
                        };
                        if !here {
                            self.finished.send_modify(|n| *n += 1);
                        }
                    }
                    Topic::Schedule => self.schedules.poke(),
                    Topic::Other => {}
                },
                Err(RecvError::Lagged(_)) => {
                    self.wake.notify_one();
                    self.schedules.poke();
                    self.finished.send_modify(|n| *n += 1);
                }
                Err(RecvError::Closed) => return,
            }
        }
    }
}

/// Top-level tasks running here.
fn top_level(running: &HashMap<String, Running>) -> usize {
    running.values().filter(|r| r.parent.is_none()).count()
}

/// Whether the holder of a node name is a live `lazyboyd` on this machine: a process with its
/// pid whose program is a `lazyboyd` (`/proc/<pid>/cmdline` stays readable for a daemon
/// that is not dumpable). A holder on another machine is told apart by its heartbeat instead.
fn alive_here(holder: &NodeHolder) -> bool {
    let Ok(pid) = u32::try_from(holder.pid) else {
        return false;
    };
    if pid == std::process::id() {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let name = std::path::Path::new(std::ffi::OsStr::from_bytes(program))
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    name.starts_with("lazyboyd")
}
