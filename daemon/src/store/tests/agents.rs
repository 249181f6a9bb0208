//! Agents: names, edits, deletion, chat appends.

use lazyboy_protocol::EventBody;

use super::on_both;
use crate::store::StoreError;

on_both! {
    async fn agents_are_created_edited_and_deleted(db: Db) {
        let store = db.store().await;
        let ops = store.create_agent("ops", "be brief", Some("m"), Some("/w")).await.unwrap();
        assert!(matches!(
            store.create_agent("ops", "", None, None).await,
            Err(StoreError::AgentExists(_))
        ));
        let edited = store.update_agent("ops", None, Some(""), Some("")).await.unwrap();
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
}
