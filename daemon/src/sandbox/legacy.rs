//! Boxes made by an older daemon: they publish CDP (9223) and noVNC (6080) on the host's
//! loopback without a password, so any local process (an agent's command too) could drive
//! their browser. This daemon never uses one (`bring_up` retires it when found) and, so that
//! one left running by the previous daemon does not stay reachable until the box is next
//! needed, looks for it as soon as it starts.
//!
//! The look runs in a task of its own: the daemon's start never waits for the Docker engine
//! (it may be slow, absent or remote). It takes the lifecycle lock, so it never races a tool's
//! `ensure`. Retiring closes the browser first, then stops and removes the container; the
//! volume stays, and the next box (made as this daemon makes them) has the same profiles.

use super::{Sandbox, docker};

impl Sandbox {
    /// Starts the look for an older daemon's box (at start, before tasks resume).
    pub(super) fn retire_old_box(&self) {
        let (name, lifecycle) = (self.config.name.clone(), self.lifecycle.clone());
        tokio::spawn(async move {
            let _one_at_a_time = lifecycle.lock().await;
            let Ok(docker) = docker::connect().await else {
                return; // no engine: nothing of ours runs there either
            };
            match docker::find(&docker, &name).await {
                Ok(Some(old)) if !old.published.is_empty() => {
                    if let Err(error) = docker::retire(&docker, &old).await {
                        tracing::warn!(%error, container = %old.id, "cannot retire the old box");
                    }
                }
                Ok(_) => {}
                Err(error) => tracing::debug!(%error, "cannot look for an old box"),
            }
        });
    }
}
