//! `browser_wait` {text? | selector?, timeout_ms ≤ 30000}, `browser_screenshot` {} and
//! `browser_release` {} (detaches: the tabs and logins stay, the screen goes to the next
//! task in line). The other browser tools are in `browser.rs`.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::box_common::{BoxTask, attach_png, box_error, png_size};
use super::{parse, schema};
use crate::sandbox::browser;
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

/// The longest `browser_wait`.
const MAX_WAIT_MS: u64 = 30_000;

pub struct Wait(pub Arc<BoxTask>);
pub struct Screenshot(pub Arc<BoxTask>);
pub struct Release(pub Arc<BoxTask>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    text: Option<String>,
    selector: Option<String>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

impl ToolHandler for Wait {
    fn name(&self) -> &str {
        "browser_wait"
    }

    fn description(&self) -> &str {
        "Wait until the page in the box's browser shows `text`, or has an element matching \
         the CSS `selector`, up to `timeout_ms` (default and most 30000)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "text": {"type": "string"},
                "selector": {"type": "string"},
                "timeout_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS},
            }),
            &[],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: WaitArgs = parse(self, args)?;
            let limit =
                Duration::from_millis(args.timeout_ms.unwrap_or(MAX_WAIT_MS).min(MAX_WAIT_MS));
            let live = self.0.screen(ctx, false).await?;
            let mut page = self.0.sandbox.page(&live).await.map_err(box_error)?;
            let found = browser::wait(
                &mut page,
                args.text.as_deref().filter(|t| !t.is_empty()),
                args.selector.as_deref().filter(|s| !s.is_empty()),
                limit,
            )
            .await
            .map_err(box_error)?;
            Ok(Handled::Output(match found {
                Ok(text) => ToolOutput {
                    text,
                    is_error: false,
                    new_output: true,
                },
                Err(text) => ToolOutput::error(text),
            }))
        })
    }
}

impl ToolHandler for Screenshot {
    fn name(&self) -> &str {
        "browser_screenshot"
    }

    fn description(&self) -> &str {
        "A picture of the page in the box's browser (its viewport), given to you as an image."
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
            let live = self.0.screen(ctx, false).await?;
            let mut page = self.0.sandbox.page(&live).await.map_err(box_error)?;
            let png = browser::screenshot(&mut page).await.map_err(box_error)?;
            let path = attach_png(ctx, &png).await?;
            let (w, h) = png_size(&png).unwrap_or_default();
            Ok(Handled::Output(ToolOutput::ok(format!(
                "browser screenshot ({w}x{h}), saved as {path}"
            ))))
        })
    }
}

impl ToolHandler for Release {
    fn name(&self) -> &str {
        "browser_release"
    }

    fn description(&self) -> &str {
        "Let go of the box's screen and browser when you are done with them for now: the \
         next task waiting gets them. Your tabs and logins stay; any browser tool takes the \
         screen again."
    }

    fn parameters(&self) -> Value {
        schema(json!({}), &[])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, _ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let _: Empty = parse(self, args)?;
            self.0.sandbox.release(&self.0.task.id).await;
            Ok(Handled::Output(ToolOutput::ok(
                "released the box's screen and browser (your tabs and logins stay)",
            )))
        })
    }
}
