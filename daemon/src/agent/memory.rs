//! The memory tools: `memory_write` {text, key?}, `memory_search` {query},
//! `memory_forget` {key}. They act on the calling task's agent only.

use serde::Deserialize;
use serde_json::{Value, json};

use super::control;
use crate::providers::ToolDef;
use crate::store::Store;
use crate::tools::ToolOutput;

pub const WRITE: &str = "memory_write";
pub const SEARCH: &str = "memory_search";
pub const FORGET: &str = "memory_forget";

pub fn is_memory(name: &str) -> bool {
    matches!(name, WRITE | SEARCH | FORGET)
}

pub fn specs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: WRITE.into(),
            description: "Remember something for later tasks (facts about the person, their \
                          preferences, how things are set up). With a key, replaces what that \
                          key held. Your memory is private to you."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"text": {"type": "string"}, "key": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: SEARCH.into(),
            description: "Search your memory (full text; any of the words).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: FORGET.into(),
            description: "Forget the memory stored under a key.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
                "additionalProperties": false
            }),
        },
    ]
}

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

/// Runs a memory tool for `agent_id`.
pub async fn handle(store: &Store, agent_id: i64, name: &str, args: Value) -> ToolOutput {
    let outcome = match name {
        WRITE => match control::parse::<Write>(name, args) {
            Ok(w) if w.text.trim().is_empty() => Err("nothing to remember: text is empty".into()),
            Ok(w) => store
                .memory_write(agent_id, w.key.as_deref(), w.text.trim())
                .await
                .map(|()| "remembered".to_owned())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        },
        SEARCH => match control::parse::<Search>(name, args) {
            Ok(s) => match store.memory_search(agent_id, &s.query, 20).await {
                Ok(found) if found.is_empty() => Ok("nothing found".to_owned()),
                Ok(found) => Ok(found
                    .into_iter()
                    .map(|(key, text)| match key {
                        Some(key) => format!("[{key}] {text}"),
                        None => text,
                    })
                    .collect::<Vec<_>>()
                    .join("\n")),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e),
        },
        FORGET => match control::parse::<Forget>(name, args) {
            Ok(f) => match store.memory_forget(agent_id, &f.key).await {
                Ok(true) => Ok(format!("forgot {}", f.key)),
                Ok(false) => Err(format!("no memory under the key {:?}", f.key)),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e),
        },
        _ => Err(format!("unknown memory tool {name}")),
    };
    match outcome {
        Ok(text) => ToolOutput::ok(text),
        Err(text) => ToolOutput::error(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::Bus;

    #[tokio::test]
    async fn memories_are_private_to_their_agent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), Bus::default())
            .await
            .unwrap();
        let a = store.create_agent("a", "", None, None).await.unwrap().id;
        let b = store.create_agent("b", "", None, None).await.unwrap().id;
        let write = |agent, args| handle(&store, agent, WRITE, args);
        assert!(
            !write(
                a,
                json!({"text": "the wifi password is hunter2", "key": "wifi"})
            )
            .await
            .is_error
        );
        assert!(
            !write(b, json!({"text": "b likes green tea"}))
                .await
                .is_error
        );
        let search = |agent, q: &str| handle(&store, agent, SEARCH, json!({"query": q}));
        assert!(search(a, "wifi password").await.text.contains("hunter2"));
        assert_eq!(
            search(b, "wifi password hunter2").await.text,
            "nothing found"
        );
        assert_eq!(search(a, "green tea").await.text, "nothing found");
        // FTS syntax in a query is just words.
        assert!(!search(a, "\"unbalanced AND (").await.is_error);
        // A key is replaced, not duplicated; forgetting is per agent too.
        write(
            a,
            json!({"text": "the wifi password is correcthorse", "key": "wifi"}),
        )
        .await;
        let found = search(a, "wifi").await.text;
        assert!(
            found.contains("correcthorse") && !found.contains("hunter2"),
            "{found}"
        );
        assert!(
            handle(&store, b, FORGET, json!({"key": "wifi"}))
                .await
                .is_error
        );
        assert!(
            !handle(&store, a, FORGET, json!({"key": "wifi"}))
                .await
                .is_error
        );
        assert_eq!(search(a, "wifi").await.text, "nothing found");
    }
}
