//! The end of a turn, and the work that outlives it.
//!
//! A turn ends when the model replies without calls. If subagents or background commands of
//! the task still run then, the loop does not end: it waits for them (with heartbeats, no
//! model calls), then records one revival note with their results and asks the model again.
//! The parent never polls. The wait is derived from the log (the last reply had no calls and
//! nothing followed it), so after a restart the loop resumes the wait, not the model, and the
//! revival is recorded once.
//!
//! Background commands are recorded when they outlive their call (`command_started`) and
//! when they end (`command_ended`, by a watcher). A daemon restart loses the ones still
//! running: recovery records them `lost` and tells the model, keeping their output.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures_util::future::select_all;
use lazyboy_protocol::{EventBody, Verdict};

use super::history::{History, REMIND_SEND, REVIVAL};
use super::turn_state::{Halt, Turn};
use crate::tools::commands::{Orphan, stop_orphan};

/// The longest a revival wait watches one command before re-checking (any exit or finished
/// subagent wakes it earlier).
const WATCH: Duration = Duration::from_secs(3600);
/// How much of the end of a command's output the revival note quotes.
const LOG_TAIL: usize = 2000;

impl Turn {
    /// The turn's last reply had no calls. `Some` verdict ends the loop; `None` means the
    /// model is asked again (after a revival or a reminder).
    pub(super) async fn end_turn(
        &mut self,
        history: &History,
        text: &str,
    ) -> Result<Option<(Verdict, String)>, Halt> {
        let live = self.live_subagents().await?;
        let commands = self.rt.commands.running_for_task(&self.task.id);
        if !live.is_empty() || !commands.is_empty() {
            return self.wait_and_revive().await;
        }
        if history.acted && history.last_message.is_none() && !history.reminded_to_send {
            self.append(EventBody::RuntimeNote {
                text: REMIND_SEND.to_owned(),
            })
            .await?;
            return Ok(None);
        }
        let message = history
            .last_message
            .clone()
            .unwrap_or_else(|| text.trim().to_owned());
        Ok(Some((Verdict::Answer, message)))
    }

    /// The task's subagents that have not ended.
    pub(super) async fn live_subagents(&self) -> Result<Vec<String>, Halt> {
        use crate::tools::task::TaskScope;
        Ok(self.scope.live_subagents().await?)
    }

    /// Waits for the task's subagents and commands, then records the revival note.
    async fn wait_and_revive(&mut self) -> Result<Option<(Verdict, String)>, Halt> {
        let started = Instant::now();
        let mut finished = self.rt.finished();
        let mut beat = crate::bus::idle_interval(self.rt.config.heartbeat);
        loop {
            finished.borrow_and_update();
            let live = self.live_subagents().await?;
            let commands: Vec<_> = self
                .rt
                .commands
                .running_for_task(&self.task.id)
                .into_iter()
                .filter_map(|info| self.rt.commands.get(&info.id))
                .collect();
            if live.is_empty() && commands.is_empty() {
                break;
            }
            // The person sent a new instruction: the model takes it now; the wait resumes
            // when its turn ends again.
            if self.steered.swap(false, Ordering::SeqCst) {
                return Ok(None);
            }
            let operation = format!(
                "waiting for {} subagent(s) and {} command(s)",
                live.len(),
                commands.len()
            );
            let any_exit = async {
                if commands.is_empty() {
                    std::future::pending::<()>().await;
                }
                let waits = commands
                    .iter()
                    .map(|c| Box::pin(c.wait_exit(WATCH, &self.cancel)));
                select_all(waits).await;
            };
            tokio::select! {
                _ = finished.changed() => {}
                () = any_exit => {}
                _ = beat.tick() => {
                    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    self.append(EventBody::Heartbeat { operation, elapsed_ms }).await?;
                }
                () = self.cancel.cancelled() => return Ok(Some(self.cancelled())),
                () = self.pause.cancelled() => return Err(Halt::Shutdown),
                // A restart: the wait resumes at the next start (it is read from the log).
                () = self.rt.drain.cancelled() => return Err(Halt::Shutdown),
            }
        }
        // Read again: it names the commands and subagents recorded since the turn began.
        let history = self.load_history().await?;
        let mut lines = Vec::new();
        for id in history
            .subagents
            .iter()
            .filter(|id| !history.reported.contains(*id))
        {
            let child = self.rt.store.task(id).await?;
            if !child.state().is_final() {
                continue;
            }
            lines.push(format!(
                "- subagent {id} ({}): {}: {}",
                child.objective,
                child.verdict.as_deref().unwrap_or("ended"),
                child.final_message.as_deref().unwrap_or("(no message)")
            ));
        }
        for command in history
            .background
            .iter()
            .filter(|b| !history.reported.contains(&b.id))
        {
            let Some(live) = self.rt.commands.get(&command.id) else {
                continue;
            };
            let Some(exit) = live.exit() else {
                continue;
            };
            // From the daemon's memory, never from the log: the command could have replaced
            // its log with a symlink to anything (`<home>/token`).
            let tail = live.tail(LOG_TAIL);
            lines.push(format!(
                "- command {} (`{}`): {exit}; the end of its output:\n{tail}",
                command.id, command.command
            ));
        }
        let mut text = REVIVAL.to_owned();
        if lines.is_empty() {
            text.push_str(" (Nothing new to report.)");
        } else {
            text.push('\n');
            text.push_str(&lines.join("\n"));
        }
        text.push_str("\nContinue the task with these results.");
        self.append(EventBody::RuntimeNote { text }).await?;
        Ok(None)
    }

    /// After a restart: background commands the log shows running are gone with the old
    /// daemon. What is left of each is stopped, as a shutdown would have (only processes
    /// carrying the command's marker; see `stop_orphan`), it is recorded `lost` (its output
    /// so far stays in its log) and the model is told; none is started again.
    pub(super) async fn report_lost_commands(&self, history: &History) -> Result<(), Halt> {
        let lost: Vec<_> = history
            .background
            .iter()
            .filter(|b| b.ended.is_none() && self.rt.commands.get(&b.id).is_none())
            .collect();
        if lost.is_empty() {
            return Ok(());
        }
        let mut note = String::from(
            "These background commands were lost when the daemon restarted; they were not run \
             again. Check the state before starting them again:",
        );
        for command in &lost {
            // A box command's processes live in the container, beyond the client's group.
            let in_box = self.rt.sandbox.stop_orphan(&command.id).await.unwrap_or(0);
            let fate = match command.pgid.map(|pgid| stop_orphan(&command.id, pgid)) {
                _ if in_box > 0 => "it was still running in the box and has been stopped",
                // Its cgroup still had processes when this daemon started: they were killed.
                _ if crate::confine::cgroup::was_running(&command.id) => {
                    "it was still running and has been stopped"
                }
                Some(Orphan::Stopped) => "it was still running and has been stopped",
                Some(Orphan::Gone) => "it had ended; how is unknown",
                Some(Orphan::Unknown) | None => "it may still be running outside LazyBoy",
            };
            let status = format!(
                "lost in a daemon restart: {fate}; its output so far is in {}",
                command.log
            );
            self.append(EventBody::CommandEnded {
                command_id: command.id.clone(),
                status,
            })
            .await?;
            note.push_str(&format!(
                "\n- {} (`{}`): {fate}; its output so far is in {}",
                command.id, command.command, command.log
            ));
        }
        self.append(EventBody::RuntimeNote { text: note }).await
    }

    /// Records the task's commands that outlived the call that started them, and watches
    /// each until it ends.
    pub(super) async fn note_background(&mut self) -> Result<(), Halt> {
        for info in self.rt.commands.running_for_task(&self.task.id) {
            if self.known_background.contains(&info.id) {
                continue;
            }
            self.known_background.insert(info.id.clone());
            self.append(EventBody::CommandStarted {
                command_id: info.id.clone(),
                command: info.cmd.clone(),
                log: format!(".lazyboy-output/{}.log", info.id),
                pgid: Some(info.pgid),
            })
            .await?;
            if let Some(command) = self.rt.commands.get(&info.id) {
                self.rt.watch_command(self.task.clone(), command);
            }
        }
        Ok(())
    }
}
