//! The lock as the runtime, the tools and the API use it (the rules are in `lock.rs`), and
//! what a holder does with the screen: show its agent's browser profile, type and click,
//! take screenshots.
//!
//! Every change to the lock appends its `box_lock` events while the lock's mutex is held,
//! so the log has them in the order they happened (the restart's rebuild replays that log),
//! then wakes the waiters.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use lazyboy_protocol::{BoxHolder, EventBody, TaskState};
use tokio_util::sync::CancellationToken;

use super::lock::{Record, Take};
use super::{BoxError, Live, Sandbox, cdp};
use crate::store::{StoreError, TaskRow, now_ms};

/// How long the screen is left to settle after the last input before a screenshot.
const SETTLE: Duration = Duration::from_millis(300);

impl Sandbox {
    async fn write(&self, records: Vec<Record>) {
        for (task, body) in records {
            if let Err(error) = self.store.append_to_task(&task, &body).await {
                tracing::warn!(%error, task = %task.id, "cannot record a box lock event");
            }
        }
        self.lock_changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The holder and the queue, for `GET /api/box`.
    pub async fn lock_view(&self) -> (Option<BoxHolder>, Vec<BoxHolder>) {
        let lock = self.lock.lock().await;
        (
            lock.holder.as_ref().map(|h| h.wire()),
            lock.queue.iter().map(|e| e.wire()).collect(),
        )
    }

    /// Takes the lock for `task`, waiting in line until it is its turn (or `cancel` fires:
    /// it then leaves the queue). `true` when it was not holding it already.
    pub async fn acquire(
        &self,
        task: &TaskRow,
        from_parent: bool,
        cancel: &CancellationToken,
    ) -> Result<bool, BoxError> {
        loop {
            let mut changed = self.lock_changed.subscribe();
            {
                let mut lock = self.lock.lock().await;
                let (take, records) = lock.take(task, from_parent, now_ms());
                for (row, body) in records {
                    if let Err(error) = self.store.append_to_task(&row, &body).await {
                        tracing::warn!(%error, "cannot record a box lock event");
                    }
                }
                if let Take::Held { fresh } = take {
                    drop(lock);
                    self.lock_changed.send_modify(|n| *n = n.wrapping_add(1));
                    return Ok(fresh);
                }
            }
            tokio::select! {
                _ = changed.changed() => {}
                () = cancel.cancelled() => {
                    self.release(&task.id).await;
                    return Err(BoxError::Cancelled);
                }
            }
        }
    }

    /// What a task waiting for the lock is waiting for, for its heartbeat. Never waits: the
    /// waiter's own `acquire` may hold the lock's mutex, suspended in the same `select!`.
    pub fn waiting_for(&self) -> String {
        let Ok(lock) = self.lock.try_lock() else {
            return "waiting for the box".to_owned();
        };
        match &lock.holder {
            Some(h) if h.person => "waiting for the box: a person has taken it over".to_owned(),
            Some(h) => {
                let (agent, task) = h
                    .task
                    .as_ref()
                    .map_or(("?", "?"), |t| (t.agent.as_str(), t.id.as_str()));
                format!("waiting for the box: held by {agent}, task {task}")
            }
            None => "waiting for the box".to_owned(),
        }
    }

    /// Whether `task` may take a screenshot without taking the lock (it or its own
    /// subagent holds it).
    pub async fn may_look(&self, task: &TaskRow) -> bool {
        self.lock.lock().await.may_look(task)
    }

    /// Releases `task`'s hold (or its place in line): `browser_release`, the end of its
    /// turn, the end of the task. The first in line takes over.
    pub async fn release(&self, task_id: &str) {
        let mut lock = self.lock.lock().await;
        let records = lock.release(task_id, now_ms());
        if records.is_empty() {
            return;
        }
        self.write(records).await;
    }

    /// A person takes the screen and browser (for `task`, else for the task holding it),
    /// until they hand back (or, for a `handoff` from `request_box_help`, until the task's
    /// next tool after their answer). The box is started if needed, and the task's browser
    /// shown.
    pub async fn takeover(&self, task: Option<TaskRow>, handoff: bool) -> Result<(), BoxError> {
        let live = self.ensure(task.as_ref()).await?;
        let mut lock = self.lock.lock().await;
        let records = lock.takeover(task, handoff, now_ms());
        let agent = lock
            .holder
            .as_ref()
            .and_then(|h| h.task.as_ref())
            .map(|t| t.agent.clone());
        self.write(records).await;
        drop(lock);
        if let Some(agent) = agent {
            self.show_profile(&live, &agent).await?;
        }
        Ok(())
    }

    /// The person hands back; `false` if no person held the box.
    pub async fn handback(&self) -> bool {
        let mut lock = self.lock.lock().await;
        let (was, records) = lock.handback(now_ms());
        self.write(records).await;
        was
    }

    /// At start, before tasks resume: rebuilds the lock from the log; a holder whose task
    /// no longer runs is released, and nobody is left waiting. Also sets off the retirement
    /// of a box an older daemon left publishing its ports (`legacy.rs`).
    pub async fn recover(&self) -> Result<(), StoreError> {
        // An older daemon's box must not stay reachable on its published ports.
        self.retire_old_box();
        let mut rows: HashMap<String, TaskRow> = HashMap::new();
        let mut lock = self.lock.lock().await;
        for (task_id, data, at_ms) in self.store.box_lock_events().await? {
            let Some(EventBody::BoxLock { action, person, .. }) =
                EventBody::from_parts("box_lock", data)
            else {
                continue;
            };
            if !rows.contains_key(&task_id) {
                match self.store.task(&task_id).await {
                    Ok(row) => {
                        rows.insert(task_id.clone(), row);
                    }
                    Err(StoreError::NoSuchTask(_)) => continue,
                    Err(error) => return Err(error),
                }
            }
            if let Some(row) = rows.get(&task_id) {
                lock.replay(row.clone(), action, person, at_ms);
            }
        }
        let state = |id: &str| rows.get(id).map(TaskRow::state);
        let records = lock.settle(
            |id| matches!(state(id), Some(TaskState::Running | TaskState::Recovering)),
            |id| state(id) == Some(TaskState::WaitingForHuman),
            now_ms(),
        );
        if let Some(holder) = &lock.holder {
            tracing::info!(holder = ?holder.wire(), "the box's lock survived the restart");
        }
        self.write(records).await;
        Ok(())
    }

    /// Makes Chromium run on `agent`'s profile (`/home/box/profiles/<agent>`).
    pub async fn show_profile(&self, live: &Live, agent: &str) -> Result<(), BoxError> {
        if self.cache().profile.as_deref() == Some(agent) {
            return Ok(());
        }
        let limit = Duration::from_secs(45);
        let started = Instant::now();
        self.run(live, "root", &["box-browser", agent], None, limit)
            .await
            .map_err(|e| BoxError::Browser(format!("cannot open {agent}'s profile: {e}")))?;
        tracing::info!(
            agent,
            ms = started.elapsed().as_millis(),
            "the box's browser shows this agent's profile"
        );
        self.cache().profile = Some(agent.to_owned());
        Ok(())
    }

    /// A PNG of the whole desktop, once the screen settled after the last input. Each call
    /// captures into its own file in the box, so no task is handed another's capture.
    pub async fn screenshot(&self, live: &Live) -> Result<Vec<u8>, BoxError> {
        let last = self.cache().last_input;
        if let Some(wait) = last.and_then(|at| SETTLE.checked_sub(at.elapsed())) {
            tokio::time::sleep(wait).await;
        }
        let png = self
            .run(live, "root", &["box-shot"], None, Duration::from_secs(20))
            .await?;
        if !png.starts_with(b"\x89PNG") {
            return Err(BoxError::Tool("box-shot did not produce a PNG".into()));
        }
        Ok(png)
    }

    /// One xdotool gesture on the desktop (`box-input` serializes typists with a lock).
    pub async fn input(&self, live: &Live, args: &[String]) -> Result<(), BoxError> {
        let mut cmd = vec!["box-input"];
        cmd.extend(args.iter().map(String::as_str));
        let result = self
            .run(live, "root", &cmd, None, Duration::from_secs(60))
            .await;
        self.cache().last_input = Some(Instant::now());
        result.map(|_| ())
    }

    /// The page on screen, for one tool call: a session on the kept CDP connection. A kept
    /// connection may have ended just now (a profile switch restarts Chromium): then once
    /// more on a new one.
    pub async fn page(&self, live: &Live) -> Result<cdp::Page, BoxError> {
        self.cache().last_input = Some(Instant::now());
        let browser = self.browser(live).await?;
        match cdp::Page::open(browser.clone()).await {
            Err(_) if !browser.is_open() => cdp::Page::open(self.browser(live).await?).await,
            page => page,
        }
    }
}
