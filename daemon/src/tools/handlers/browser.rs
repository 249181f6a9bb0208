//! The browser tools, on the box's Chromium (CDP): `browser_navigate` {url},
//! `browser_snapshot` {}, `browser_click` {ref}, `browser_type` {ref, text, submit?}.
//! `browser_wait`, `browser_screenshot` and `browser_release` are in `browser_more.rs`.
//!
//! Each takes the box's lock first (waiting in line while another task holds it) and shows
//! the agent's own profile, so the page a tool acts on is always this agent's. Effect `box`.
//! What they do to the page is `sandbox::browser`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::box_common::{BoxTask, box_error};
use super::{parse, schema};
use crate::sandbox::browser;
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

pub struct Navigate(pub Arc<BoxTask>);
pub struct Snapshot(pub Arc<BoxTask>);
pub struct Click(pub Arc<BoxTask>);
pub struct Type(pub Arc<BoxTask>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Url {
    url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ref {
    #[serde(rename = "ref")]
    reference: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TypeArgs {
    #[serde(rename = "ref")]
    reference: u32,
    text: String,
    #[serde(default)]
    submit: bool,
}

fn ref_schema() -> Value {
    json!({"type": "integer", "minimum": 1, "description": "A ref number from your last browser_snapshot."})
}

fn ok(text: String) -> ToolOutcome {
    Ok(Handled::Output(ToolOutput::ok(text)))
}

impl ToolHandler for Navigate {
    fn name(&self) -> &str {
        "browser_navigate"
    }

    fn description(&self) -> &str {
        "Open a URL in the box's browser (Chromium on the shared desktop, with your own \
         logins). Waits for the page to load. Takes the box's screen: other tasks wait until \
         you call browser_release or your turn ends. Then use browser_snapshot to read it."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"url": {"type": "string", "description": "An absolute http:// or https:// URL."}}),
            &["url"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Url = parse(self, args)?;
            let url = browser::check_url(&args.url).map_err(ToolOutput::error)?;
            let live = self.0.screen(ctx, false).await?;
            let mut page = self.0.sandbox.page(&live).await.map_err(box_error)?;
            ok(browser::navigate(&mut page, &url)
                .await
                .map_err(box_error)?)
        })
    }
}

impl ToolHandler for Snapshot {
    fn name(&self) -> &str {
        "browser_snapshot"
    }

    fn description(&self) -> &str {
        "Read the page in the box's browser: its title, URL and readable text, with a \
         numbered [ref] for every link, button and field. Use the refs with browser_click \
         and browser_type; they are valid until your next snapshot."
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
            let text = browser::snapshot(&mut page).await.map_err(box_error)?;
            Ok(Handled::Output(ToolOutput::ok(crate::tools::spill::limit(
                ctx, text,
            ))))
        })
    }
}

impl ToolHandler for Click {
    fn name(&self) -> &str {
        "browser_click"
    }

    fn description(&self) -> &str {
        "Click a link, button or field in the box's browser by its ref from your last \
         browser_snapshot (a real mouse click). Waits for a page it opens to load."
    }

    fn parameters(&self) -> Value {
        schema(json!({"ref": ref_schema()}), &["ref"])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Ref = parse(self, args)?;
            let live = self.0.screen(ctx, false).await?;
            let mut page = self.0.sandbox.page(&live).await.map_err(box_error)?;
            ok(browser::click(&mut page, args.reference)
                .await
                .map_err(box_error)?)
        })
    }
}

impl ToolHandler for Type {
    fn name(&self) -> &str {
        "browser_type"
    }

    fn description(&self) -> &str {
        "Type text into a field of the box's browser by its ref from your last \
         browser_snapshot (its old content is replaced); `submit` presses Enter after."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "ref": ref_schema(),
                "text": {"type": "string"},
                "submit": {"type": "boolean", "description": "Press Enter after typing. Default false."},
            }),
            &["ref", "text"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: TypeArgs = parse(self, args)?;
            let live = self.0.screen(ctx, false).await?;
            let mut page = self.0.sandbox.page(&live).await.map_err(box_error)?;
            let done = browser::type_text(&mut page, args.reference, &args.text, args.submit)
                .await
                .map_err(box_error)?;
            ok(done)
        })
    }
}
