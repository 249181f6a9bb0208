//! What the box tools share: the task they were registered for (its agent names the box's
//! work directory and browser profile; its row names the lock's holder), taking the box's
//! screen (waiting in line with heartbeats that name the holder), paths inside the box, and
//! images handed to the model.
//!
//! The box tools are registered into every task's registry ([`super::register_box`]), also
//! when Docker is missing: then each call answers why, and nothing runs on the host.

use std::sync::Arc;

use lazyboy_protocol::EventBody;

use crate::sandbox::{BoxError, Live, Sandbox};
use crate::store::TaskRow;
use crate::tools::{ToolContext, ToolError, ToolOutput, respond};

/// The box, as one task's tools reach it.
pub struct BoxTask {
    pub sandbox: Arc<Sandbox>,
    pub task: TaskRow,
    /// A `computer_use` subagent: its screen tools take the lock from its parent.
    pub computer_use: bool,
}

/// A box failure, for the model (the turn goes on).
pub fn box_error(error: BoxError) -> ToolError {
    respond(error.to_string())
}

impl BoxTask {
    pub fn agent(&self) -> &str {
        &self.task.agent
    }

    /// The running box (no lock: shell and files).
    pub async fn live(&self) -> Result<Live, ToolError> {
        self.sandbox
            .ensure(Some(&self.task))
            .await
            .map_err(box_error)
    }

    /// The box's screen and browser for this task: waits for the lock (recording heartbeats
    /// that say who holds it), starts the box if needed and shows the agent's profile.
    /// `from_parent`: a `computer_use` subagent takes the screen from its parent.
    pub async fn screen(&self, ctx: &ToolContext, from_parent: bool) -> Result<Live, ToolError> {
        // No box, no lock: without Docker the call fails here, having waited for nobody.
        self.live().await?;
        let acquire = self.sandbox.acquire(&self.task, from_parent, &ctx.cancel);
        let taken = crate::heartbeat::beside(self.sandbox.heartbeat, acquire, |elapsed| {
            ctx.scope.record(EventBody::Heartbeat {
                operation: format!("{}, {} s", self.sandbox.waiting_for(), elapsed.as_secs()),
                elapsed_ms: crate::heartbeat::millis(elapsed),
            })
        })
        .await?;
        taken.map_err(box_error)?;
        let live = self.live().await?;
        self.sandbox
            .show_profile(&live, self.agent())
            .await
            .map_err(box_error)?;
        Ok(live)
    }

    /// A path in the box: relative ones are in the agent's work directory.
    pub async fn path(&self, live: &Live, path: &str) -> Result<String, ToolError> {
        let path = path.trim();
        if path.is_empty() {
            return Err(respond("the path is empty"));
        }
        if path.starts_with('/') {
            return Ok(path.to_owned());
        }
        let dir = self
            .sandbox
            .workdir(live, self.agent())
            .await
            .map_err(box_error)?;
        Ok(format!("{dir}/{path}"))
    }
}

/// Saves `png` as `.lazyboy-output/<call>.png` in the workspace and records it as this
/// call's image (the model gets it with the result); returns the relative path.
/// The file is written through the checked output directory's fd, replacing whatever had
/// its name (a planted symlink is removed, never followed).
pub async fn attach_png(ctx: &ToolContext, png: &[u8]) -> Result<String, ToolError> {
    let name = format!("{}.png", ctx.call_id);
    let cannot =
        |e: &dyn std::fmt::Display| ToolOutput::error(format!("cannot save the screenshot: {e}"));
    let dir = ctx.workspace.output().map_err(|e| cannot(&e))?;
    dir.replace(&name, png).map_err(|e| cannot(&e))?;
    let path = format!("{}/{name}", crate::tools::spill::OUTPUT_DIR);
    ctx.scope
        .record(EventBody::ToolImage {
            call_id: ctx.call.clone(),
            path: path.clone(),
            media_type: "image/png".to_owned(),
        })
        .await?;
    Ok(path)
}

/// Width × height of a PNG (from its header), for the result text.
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    let word = |at: usize| {
        let bytes: [u8; 4] = png.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(bytes))
    };
    Some((word(16)?, word(20)?))
}
