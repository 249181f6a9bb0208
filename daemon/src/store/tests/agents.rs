//! Agents: names, edits, deletion, chat appends.

use lazyboy_protocol::{Effect, Event, EventBody, Sandbox};

use super::on_both;
use crate::store::{BoundaryChange, EventFilter, StoreError};

on_both! {
    async fn agents_are_created_edited_and_deleted(db: Db) {
        let store = db.store().await;
        let ops = store.create_agent("ops", "be brief", Some("m"), Some("/w")).await.unwrap();
        assert!(matches!(
            store.create_agent("ops", "", None, None).await,
            Err(StoreError::AgentExists(_))
        ));
        let edited = store.update_agent("ops", None, Some(""), Some(""), None).await.unwrap();
        assert_eq!((edited.model, edited.workspace), (None, None));
        assert_eq!(edited.instructions, "be brief");
        store.create_task("ops", "job", "/w").await.unwrap();
        let listed = store.list_agents().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].task_state.as_deref(), Some("queued"));
        let (thread, event) = store
            .append_to_agent("ops", &EventBody::UserMessage { text: "hi".into() })
            .await
            .unwrap();
        assert_eq!((thread, event.agent_id), (ops.thread.clone(), ops.id));
        store.delete_agent("ops").await.unwrap();
        assert!(matches!(store.agent("ops").await, Err(StoreError::NoSuchAgent(_))));
        assert!(matches!(
            store.append_to_agent("ops", &EventBody::UserMessage { text: "x".into() }).await,
            Err(StoreError::NoSuchAgent(_))
        ));
        let again = store.create_agent("ops", "", None, None).await.unwrap();
        assert_ne!(again.id, ops.id, "the name is free again; the old agent stays in the log");
    }

    /// An agent's MCP servers and boundaries are stored, changed only where given, logged
    /// in `agent_updated`, and handed to its tasks.
    async fn agents_carry_mcp_servers_and_boundaries(db: Db) {
        let store = db.store().await;
        let strict = BoundaryChange {
            approve: Some(vec![Effect::Command]),
            allow: Some(vec!["git status".into()]),
            sandbox: Some(Sandbox::ReadOnly),
            git_write: None,
        };
        let ops = store.create_agent_with("ops", "", None, None, &strict).await.unwrap();
        assert_eq!(ops.to_api(std::path::Path::new("/w")).sandbox, Sandbox::ReadOnly);
        assert!(ops.mcp_servers().is_empty());
        let read = store.agent("ops").await.unwrap();
        assert_eq!(read.boundaries, ops.boundaries);
        assert_eq!(read.boundaries.approve(), [Effect::Command]);

        let servers = vec!["git".to_owned(), "time".to_owned()];
        let looser = BoundaryChange {
            sandbox: Some(Sandbox::WorkspaceWrite),
            git_write: Some(true),
            ..Default::default()
        };
        let edited = store
            .update_agent_with("ops", Some("be brief"), None, None, Some(&servers), &looser)
            .await
            .unwrap();
        assert_eq!(edited.mcp_servers(), servers);
        assert_eq!(edited.boundaries.allow(), ["git status"], "what is not given stays");
        let stored = store.agent_boundaries(ops.id).await.unwrap();
        assert_eq!(stored, edited.boundaries);
        assert_eq!(stored.sandbox("ops"), Sandbox::WorkspaceWrite);
        assert!(stored.git_write && !ops.boundaries.git_write);
        assert!(store.agent("ops").await.unwrap().to_api(std::path::Path::new("/w")).git_write);
        assert_eq!(store.agent("ops").await.unwrap().mcp_servers(), servers);
        let events = store.events_after(0, &EventFilter::default(), 100).await.unwrap();
        let logged: Vec<Vec<String>> = events
            .iter()
            .filter_map(|e| serde_json::from_str::<Event>(e.json()).ok()?.body())
            .filter_map(|body| match body {
                EventBody::AgentUpdated { mcp, .. } => Some(mcp),
                _ => None,
            })
            .collect();
        assert_eq!(logged, std::slice::from_ref(&servers));

        let task = store.create_task("ops", "job", "/w").await.unwrap();
        assert_eq!(task.mcp_servers(), servers);
        assert_eq!(store.task(&task.id).await.unwrap().mcp_servers(), servers);
        let child = store.create_subagent(&task, "look", None).await.unwrap();
        assert_eq!(child.mcp_servers(), servers);
        store.update_agent("ops", None, None, None, Some(&[])).await.unwrap();
        assert!(store.task(&task.id).await.unwrap().mcp_servers().is_empty(), "as they are now");
        assert_eq!(store.agent_boundaries(9999).await.unwrap(), Default::default());
    }
}
