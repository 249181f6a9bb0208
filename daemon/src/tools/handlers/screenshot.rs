//! `screenshot` {}: a PNG of the box's whole desktop, given to the model as an image (both
//! wire formats: see `providers::images`). Effect `box`: it takes the box's lock like the
//! browser tools, so a task never sees another's screen; a parent may look while its own
//! `computer_use` subagent holds the screen (read-only: it has no `computer`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::box_common::{BoxTask, attach_png, box_error, png_size};
use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

pub struct Screenshot(pub Arc<BoxTask>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

/// Takes a desktop screenshot for the calling task and attaches it to the call.
pub async fn capture(task: &BoxTask, ctx: &ToolContext) -> Result<String, crate::tools::ToolError> {
    let live = if task.sandbox.may_look(&task.task).await {
        task.live().await?
    } else {
        task.screen(ctx, task.computer_use).await?
    };
    let png = task.sandbox.screenshot(&live).await.map_err(box_error)?;
    let path = attach_png(ctx, &png).await?;
    let (w, h) = png_size(&png).unwrap_or_default();
    Ok(format!(
        "screenshot of the box's desktop ({w}x{h}), saved as {path}"
    ))
}

impl ToolHandler for Screenshot {
    fn name(&self) -> &str {
        "screenshot"
    }

    fn description(&self) -> &str {
        "A picture of the box's whole desktop (the shared Linux screen with its browser), \
         given to you as an image. Takes the box's screen while you look."
    }

    fn parameters(&self) -> Value {
        schema(json!({}), &[])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let _: Empty = parse(self, args)?;
            let text = capture(&self.0, ctx).await?;
            Ok(Handled::Output(ToolOutput::ok(text)))
        })
    }
}
