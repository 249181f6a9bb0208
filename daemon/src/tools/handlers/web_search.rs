//! `web_search`: a query to the configured search provider ([`crate::web::search`]); offered
//! only when `[web_search]` names one. Effect `network`, like `web_fetch`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};
use crate::web::Web;

pub const NAME: &str = "web_search";

const DEFAULT_LIMIT: usize = 8;
const MAX_LIMIT: usize = 20;

pub struct WebSearch {
    pub web: Arc<Web>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    limit: Option<usize>,
}

impl ToolHandler for WebSearch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Search the public web. Returns results (title, URL, snippet) and, with some \
         providers, a short answer; read a result with web_fetch."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "query": {"type": "string", "description": "What to search for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": format!("Results to return. Default {DEFAULT_LIMIT}.")},
            }),
            &["query"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Network
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let Some(search) = &self.web.search else {
                return Ok(ToolOutput::error(crate::web::search::HOW_TO_ENABLE).into());
            };
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
            let answer = tokio::select! {
                answer = search.run(&args.query, limit) => answer,
                () = ctx.cancel.cancelled() => {
                    return Ok(ToolOutput::error("cancelled: the task was stopped").into());
                }
            };
            let answer = match answer {
                Ok(answer) => answer,
                Err(error) => return Ok(ToolOutput::error(error).into()),
            };
            let mut out = String::new();
            if let Some(text) = &answer.answer {
                out.push_str(&format!("Answer: {text}\n\n"));
            }
            if answer.hits.is_empty() {
                out.push_str("No results.");
            }
            for (n, hit) in answer.hits.iter().enumerate() {
                out.push_str(&format!("{}. {}\n   {}\n", n + 1, hit.title, hit.url));
                if !hit.snippet.is_empty() {
                    out.push_str(&format!("   {}\n", hit.snippet.replace('\n', " ")));
                }
            }
            Ok(Handled::Output(ToolOutput::ok(out.trim_end().to_owned())))
        })
    }
}
