//! `computer` {action, x?, y?, to_x?, to_y?, text?, keys?, amount?}: the mouse and keyboard
//! of the box's desktop (xdotool on `:1`, through `box-input`), for `computer_use`
//! subagents only. Every action but `wait` answers with a screenshot of the result. The
//! first call takes the box's lock (from the subagent's parent, if it held it), so one
//! `computer_use` subagent works at a time in the daemon and a second waits in line.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::box_common::{BoxTask, box_error};
use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond};

pub const NAME: &str = "computer";

pub struct Computer(pub Arc<BoxTask>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
    x: Option<u32>,
    y: Option<u32>,
    to_x: Option<u32>,
    to_y: Option<u32>,
    text: Option<String>,
    keys: Option<String>,
    amount: Option<i32>,
}

/// The xdotool arguments for one action (`None` for `screenshot` and `wait`).
fn gesture(args: &Args) -> Result<Option<Vec<String>>, String> {
    let at = || match (args.x, args.y) {
        (Some(x), Some(y)) => Ok(vec!["mousemove".to_owned(), x.to_string(), y.to_string()]),
        _ => Err(format!(
            "{} needs x and y (pixels on the 1280x800 screen)",
            args.action
        )),
    };
    let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    Ok(Some(match args.action.as_str() {
        "screenshot" | "wait" => return Ok(None),
        "move" => at()?,
        "click" => [at()?, words(&["click", "1"])].concat(),
        "double_click" => [at()?, words(&["click", "--repeat", "2", "1"])].concat(),
        "drag" => {
            let (Some(tx), Some(ty)) = (args.to_x, args.to_y) else {
                return Err("drag needs x, y and to_x, to_y".into());
            };
            let to = vec!["mousemove".to_owned(), tx.to_string(), ty.to_string()];
            [
                at()?,
                words(&["mousedown", "1"]),
                to,
                words(&["mouseup", "1"]),
            ]
            .concat()
        }
        "type" => match &args.text {
            Some(text) if !text.is_empty() => {
                vec![
                    "type".into(),
                    "--delay".into(),
                    "12".into(),
                    "--".into(),
                    text.clone(),
                ]
            }
            _ => return Err("type needs text".into()),
        },
        "key" => match &args.keys {
            Some(keys) if !keys.trim().is_empty() => {
                let mut out = words(&["key", "--"]);
                out.extend(keys.split_whitespace().map(str::to_owned));
                out
            }
            _ => return Err("key needs keys, e.g. \"ctrl+l\" or \"Return\"".into()),
        },
        "scroll" => {
            let amount = args.amount.unwrap_or(3);
            let button = if amount < 0 { "4" } else { "5" };
            let clicks = amount.unsigned_abs().clamp(1, 50).to_string();
            let mut out = if args.x.is_some() { at()? } else { Vec::new() };
            out.extend(words(&["click", "--repeat", &clicks, button]));
            out
        }
        other => {
            return Err(format!(
                "unknown action {other:?}: screenshot, click, double_click, move, drag, type, \
                 key, scroll or wait"
            ));
        }
    }))
}

impl ToolHandler for Computer {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Use the box's desktop (1280x800) with the mouse and keyboard. action: screenshot, \
         click / double_click / move (x, y), drag (x, y to to_x, to_y), type (text), key \
         (keys, xdotool names: \"ctrl+l\", \"Return\", \"Tab\"), scroll (amount: lines, \
         negative is up; at x, y if given), wait (amount ms, at most 10000). Every action \
         but wait answers with a screenshot of the result."
    }

    fn parameters(&self) -> Value {
        let n = json!({"type": "integer", "minimum": 0});
        schema(
            json!({
                "action": {"type": "string", "enum": ["screenshot", "click", "double_click", "move", "drag", "type", "key", "scroll", "wait"]},
                "x": n, "y": n, "to_x": n, "to_y": n,
                "text": {"type": "string"},
                "keys": {"type": "string"},
                "amount": {"type": "integer"},
            }),
            &["action"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Box
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let gesture = gesture(&args).map_err(respond)?;
            tracing::debug!(action = %args.action, "computer: taking the screen");
            let live = self.0.screen(ctx, true).await?;
            tracing::debug!(action = %args.action, "computer: has the screen");
            if args.action == "wait" {
                let ms = args.amount.unwrap_or(1000).clamp(0, 10_000);
                tokio::time::sleep(Duration::from_millis(u64::from(ms.unsigned_abs()))).await;
                return Ok(Handled::Output(ToolOutput::ok(format!("waited {ms} ms"))));
            }
            if let Some(gesture) = gesture {
                self.0
                    .sandbox
                    .input(&live, &gesture)
                    .await
                    .map_err(box_error)?;
            }
            tracing::debug!(action = %args.action, "computer: input done");
            let shot = super::screenshot::capture(&self.0, ctx).await?;
            Ok(Handled::Output(ToolOutput::ok(format!(
                "{}: done; {shot}",
                args.action
            ))))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Args {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn actions_become_one_xdotool_gesture() {
        let click = gesture(&args(json!({"action": "click", "x": 10, "y": 20}))).unwrap();
        assert_eq!(click.unwrap(), ["mousemove", "10", "20", "click", "1"]);
        let drag = gesture(&args(
            json!({"action": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4}),
        ));
        assert_eq!(
            drag.unwrap().unwrap(),
            [
                "mousemove",
                "1",
                "2",
                "mousedown",
                "1",
                "mousemove",
                "3",
                "4",
                "mouseup",
                "1"
            ]
        );
        let keys = gesture(&args(json!({"action": "key", "keys": "ctrl+l Return"}))).unwrap();
        assert_eq!(keys.unwrap(), ["key", "--", "ctrl+l", "Return"]);
        let up = gesture(&args(json!({"action": "scroll", "amount": -2}))).unwrap();
        assert_eq!(up.unwrap(), ["click", "--repeat", "2", "4"]);
        assert!(
            gesture(&args(json!({"action": "screenshot"})))
                .unwrap()
                .is_none()
        );
        assert!(
            gesture(&args(json!({"action": "click"})))
                .unwrap_err()
                .contains("needs x and y")
        );
        assert!(
            gesture(&args(json!({"action": "fly"})))
                .unwrap_err()
                .contains("unknown action")
        );
    }
}
