//! `web_fetch`: a direct, anonymous GET of a public page, as readable text (see
//! [`crate::web`] for the address policy, redirects, cache and conversion).
//!
//! Its effect is `network`: a GET changes nothing by contract, but it reaches outside the
//! machine, and approvals name that; so it runs alone rather than beside reads.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, spill};
use crate::web::Web;

pub const NAME: &str = "web_fetch";

/// Characters of text returned when the model does not say.
const DEFAULT_CHARS: usize = 15_000;
const MAX_CHARS: usize = 100_000;

pub struct WebFetch {
    pub web: Arc<Web>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    max_chars: Option<usize>,
}

impl ToolHandler for WebFetch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Fetch a public web page (http/https GET from the host, anonymous: no cookies, no \
         login) and return it as readable text: HTML converted (links listed with their URLs), \
         JSON and plain text as they are, other content only described. Redirects are \
         followed; local and private addresses are refused. The same URL within 10 minutes \
         comes from a cache. For pages that need a login or JavaScript, use the browser."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "url": {"type": "string", "description": "The http:// or https:// URL."},
                "max_chars": {"type": "integer", "minimum": 100, "maximum": MAX_CHARS,
                    "description": format!("Characters of text to return. Default {DEFAULT_CHARS}.")},
            }),
            &["url"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Network
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let max_chars = args
                .max_chars
                .unwrap_or(DEFAULT_CHARS)
                .clamp(100, MAX_CHARS);
            let fetched = tokio::select! {
                fetched = self.web.fetch(&args.url) => fetched,
                () = ctx.cancel.cancelled() => {
                    return Ok(ToolOutput::error("cancelled: the task was stopped").into());
                }
            };
            let fetched = match fetched {
                Ok(fetched) => fetched,
                Err(error) => {
                    return Ok(
                        ToolOutput::error(format!("web_fetch {}: {error}", args.url)).into(),
                    );
                }
            };
            let page = &fetched.page;
            let mut out = format!(
                "URL: {}\nContent-Type: {}\nStatus: {}\n",
                page.url,
                if page.content_type.is_empty() {
                    "(none)"
                } else {
                    &page.content_type
                },
                page.status
            );
            if !page.redirects.is_empty() {
                out.push_str(&format!(
                    "Redirected from: {}\n",
                    page.redirects.join(" -> ")
                ));
            }
            if let Some(age) = fetched.cached {
                out.push_str(&format!(
                    "(from the cache: fetched {} s ago)\n",
                    age.as_secs()
                ));
            }
            if page.truncated {
                out.push_str(&format!(
                    "(the body was cut at the size cap: only its first {} bytes were read)\n",
                    page.bytes
                ));
            }
            out.push('\n');
            let total = page.text.chars().count();
            if total > max_chars {
                out.extend(page.text.chars().take(max_chars));
                out.push_str(&format!(
                    "\n\n[... {} more characters: call again with a larger max_chars (at most \
                     {MAX_CHARS})]",
                    total - max_chars
                ));
            } else {
                out.push_str(&page.text);
            }
            let out = spill::limit(ctx, out);
            Ok(Handled::Output(if (200..300).contains(&page.status) {
                ToolOutput::ok(out)
            } else {
                ToolOutput::error(out)
            }))
        })
    }
}
