//! Tasks: rows, history, usage, and guarded state changes.

use lazyboy_protocol::{EventBody, TaskState, Verdict};

use super::on_both;
use crate::store::StoreError;

on_both! {
    /// A task and its subagent read back with their history; usage sums per task and agent.
    async fn tasks_subagents_history_and_usage(db: Db) {
        let store = db.store().await;
        store.create_agent("ops", "be brief", Some("m1"), None).await.unwrap();
        let task = store.create_task("ops", "build it", "/w").await.unwrap();
        assert_eq!((task.state(), task.instructions.as_str()), (TaskState::Queued, "be brief"));
        let read = store.task(&task.id).await.unwrap();
        assert_eq!((read.objective.as_str(), read.model.as_deref()), ("build it", Some("m1")));
        let tools = vec!["read_file".to_owned()];
        let child = store.create_subagent(&task, "look", Some(&tools)).await.unwrap();
        assert_eq!(child.parent_id.as_deref(), Some(task.id.as_str()));
        assert_eq!(child.allowed_tools(), Some(tools));
        let children = store.subagents(&task.id).await.unwrap();
        assert_eq!(children.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [child.id.as_str()]);
        let history = store.task_history(&task.id).await.unwrap();
        assert!(matches!(history[0].1, EventBody::TaskCreated { .. }));
        assert!(matches!(history[1].1, EventBody::SubagentSpawned { .. }));
        let delta = EventBody::AssistantDelta { text: "x".into() };
        store.append_to_task(&task, &delta).await.unwrap();
        assert_eq!(store.task_history(&task.id).await.unwrap().len(), 2, "deltas are skipped");

        let usage = |input, estimated| EventBody::ModelUsage {
            model: "m1".into(),
            input_tokens: input,
            cached_tokens: 1,
            output_tokens: 2,
            estimated,
        };
        store.record_usage(&task, &usage(10, false), Some(5)).await.unwrap();
        store.record_usage(&task, &usage(20, true), None).await.unwrap();
        store.record_usage(&child, &usage(30, false), Some(7)).await.unwrap();
        let sums = store.task(&task.id).await.unwrap().sums.usage();
        assert_eq!((sums.input_tokens, sums.output_tokens, sums.estimated), (30, 4, true));
        assert_eq!(sums.cost_microusd, Some(5));
        let agent = store.agent("ops").await.unwrap();
        assert_eq!((agent.sums.input_tokens, agent.sums.cost_microusd, agent.sums.usage_estimated), (60, Some(12), true));

        let queued = store.list_tasks(Some("ops"), Some(TaskState::Queued), 10).await.unwrap();
        assert_eq!(queued.len(), 2);
        assert_eq!(queued[0].id, child.id, "newest first");
        assert!(store.list_tasks(Some("nobody"), None, 10).await.unwrap().is_empty());
        assert_eq!(store.tasks_in(&[TaskState::Queued]).await.unwrap()[0].id, task.id);
        assert!(matches!(store.task("t-none").await, Err(StoreError::NoSuchTask(_))));
    }

    /// A loop's change needs the claim; anyone else's needs the state it read; a requeue
    /// that loses its compare-and-set writes nothing.
    async fn state_changes_carry_their_preconditions(db: Db) {
        let store = db.store().await;
        store.create_agent("ops", "", None, None).await.unwrap();
        let task = store.create_task("ops", "job", "/w").await.unwrap();
        let error = store.set_task_state(&task, TaskState::Running).await.unwrap_err();
        assert!(matches!(error, StoreError::NotOwner(_)), "{error}");
        let error = store
            .end_task(&task, TaskState::WaitingForHuman, Verdict::Cancelled, "no")
            .await
            .unwrap_err();
        assert!(matches!(&error, StoreError::Changed { found, .. } if found == "queued"), "{error}");
        let before = store.last_seq().await.unwrap();
        let note = EventBody::UserMessage { text: "again".into() };
        let error = store.requeue(&task, TaskState::Done, &note).await.unwrap_err();
        assert!(matches!(error, StoreError::Changed { .. }), "{error}");
        assert_eq!(store.last_seq().await.unwrap(), before, "nothing was written");

        store.end_task(&task, TaskState::Queued, Verdict::Cancelled, "stopped").await.unwrap();
        let ended = store.task(&task.id).await.unwrap();
        assert_eq!((ended.state(), ended.final_message.as_deref()), (TaskState::Cancelled, Some("stopped")));
        let event = store.requeue(&ended, TaskState::Cancelled, &note).await.unwrap();
        let history = store.task_history_after(&task.id, event.seq - 1).await.unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(history[0].1, note);
        assert_eq!(history[1].1, EventBody::TaskState { state: TaskState::Queued });
        assert_eq!(store.task(&task.id).await.unwrap().state(), TaskState::Queued);
    }
}
