//! The agent's private memory: `memory_write` {text, key?}, `memory_search` {query},
//! `memory_forget` {key}. They reach only the calling task's agent (through
//! [`Memory`](crate::tools::task::Memory)); a store failure aborts the turn.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond};

pub struct MemoryWrite;
pub struct MemorySearch;
pub struct MemoryForget;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    text: String,
    #[serde(default)]
    key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Search {
    query: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Forget {
    key: String,
}

impl ToolHandler for MemoryWrite {
    fn name(&self) -> &str {
        "memory_write"
    }

    fn description(&self) -> &str {
        "Remember something for later tasks (facts about the person, their preferences, how \
         things are set up). With a key, replaces what that key held. Your memory is private \
         to you."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"text": {"type": "string"}, "key": {"type": "string"}}),
            &["text"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let write: Write = parse(self, args)?;
            if write.text.trim().is_empty() {
                return Err(respond("nothing to remember: text is empty"));
            }
            // The memory table is not the log: redacted here, before it is stored.
            let key = write.key.as_deref().map(crate::redact::text);
            ctx.scope
                .memory()
                .write(key.as_deref(), &crate::redact::text(write.text.trim()))
                .await?;
            Ok(Handled::Output(ToolOutput::ok("remembered")))
        })
    }
}

impl ToolHandler for MemorySearch {
    fn name(&self) -> &str {
        "memory_search"
    }

    fn description(&self) -> &str {
        "Search your own memory (full text, any of the words) for what earlier tasks remembered: facts, preferences, how things are set up."
    }

    fn parameters(&self) -> Value {
        schema(json!({"query": {"type": "string"}}), &["query"])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let search: Search = parse(self, args)?;
            let found = ctx.scope.memory().search(&search.query, 20).await?;
            if found.is_empty() {
                return Ok(Handled::Output(ToolOutput::ok("nothing found")));
            }
            let lines: Vec<String> = found
                .into_iter()
                .map(|(key, text)| match key {
                    Some(key) => format!("[{key}] {text}"),
                    None => text,
                })
                .collect();
            Ok(Handled::Output(ToolOutput::ok(lines.join("\n"))))
        })
    }
}

impl ToolHandler for MemoryForget {
    fn name(&self) -> &str {
        "memory_forget"
    }

    fn description(&self) -> &str {
        "Forget the memory stored under a key (one you gave memory_write), for facts that no longer hold."
    }

    fn parameters(&self) -> Value {
        schema(json!({"key": {"type": "string"}}), &["key"])
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let forget: Forget = parse(self, args)?;
            if ctx.scope.memory().forget(&forget.key).await? {
                Ok(Handled::Output(ToolOutput::ok(format!(
                    "forgot {}",
                    forget.key
                ))))
            } else {
                Err(respond(format!("no memory under the key {:?}", forget.key)))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::bus::Bus;
    use crate::store::Store;
    use crate::tools::testing::{FakeScope, call, ctx_with};
    use crate::tools::{ToolError, ToolHandler};

    #[tokio::test]
    async fn memories_are_private_to_their_agent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), Bus::default())
            .await
            .unwrap();
        let a = store.create_agent("a", "", None, None).await.unwrap().id;
        let b = store.create_agent("b", "", None, None).await.unwrap().id;
        let scope = |agent_id| {
            Arc::new(FakeScope {
                store: Some(store.clone()),
                agent_id,
                ..FakeScope::default()
            })
        };
        let (_da, ca) = ctx_with(scope(a));
        let (_db, cb) = ctx_with(scope(b));
        let w = json!({"text": "the wifi password is hunter2", "key": "wifi"});
        assert!(!call(&MemoryWrite, &ca, w).await.is_error);
        let w = json!({"text": "b likes green tea"});
        assert!(!call(&MemoryWrite, &cb, w).await.is_error);
        let search = |ctx, q: &str| call(&MemorySearch, ctx, json!({"query": q}));
        assert!(search(&ca, "wifi password").await.text.contains("hunter2"));
        assert_eq!(
            search(&cb, "wifi password hunter2").await.text,
            "nothing found"
        );
        assert_eq!(search(&ca, "green tea").await.text, "nothing found");
        // FTS syntax in a query is just words.
        assert!(!search(&ca, "\"unbalanced AND (").await.is_error);
        // A key is replaced, not duplicated; forgetting is per agent too.
        let w = json!({"text": "the wifi password is correcthorse", "key": "wifi"});
        call(&MemoryWrite, &ca, w).await;
        let found = search(&ca, "wifi").await.text;
        assert!(
            found.contains("correcthorse") && !found.contains("hunter2"),
            "{found}"
        );
        assert!(
            call(&MemoryForget, &cb, json!({"key": "wifi"}))
                .await
                .is_error
        );
        assert!(
            !call(&MemoryForget, &ca, json!({"key": "wifi"}))
                .await
                .is_error
        );
        assert_eq!(search(&ca, "wifi").await.text, "nothing found");

        // A lost store ends the turn instead of becoming text for the model.
        store.close().await;
        let lost = MemorySearch.handle(&ca, json!({"query": "wifi"})).await;
        assert!(matches!(lost, Err(ToolError::Fatal(_))), "{lost:?}");
    }
}
