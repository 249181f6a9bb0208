//! The claim protocol on one node: the queue's order, the per-agent rule, capacity, pins,
//! subagents, renewals, stop requests, the fence, and recovery of this node's own tasks.

use lazyboy_protocol::{EventBody, TaskState, Verdict};

use super::on_both;
use crate::store::StoreError;

on_both! {
    /// Oldest first, one top-level task per agent, at most `capacity` on the node; each
    /// claim logs `running`.
    async fn claims_take_the_queue_in_order_within_the_limits(db: Db) {
        let store = db.store().await;
        store.create_agent("x", "", None, None).await.unwrap();
        store.create_agent("y", "", None, None).await.unwrap();
        let x1 = store.create_task("x", "x1", "/w").await.unwrap();
        let x2 = store.create_task("x", "x2", "/w").await.unwrap();
        let y1 = store.create_task("y", "y1", "/w").await.unwrap();
        let first = store.claim_next(2).await.unwrap().unwrap();
        assert_eq!((first.id.as_str(), first.state()), (x1.id.as_str(), TaskState::Running));
        assert_eq!(first.owner.as_deref(), Some("a"));
        assert!(first.lease_expires_at_ms.is_some());
        let second = store.claim_next(2).await.unwrap().unwrap();
        assert_eq!(second.id, y1.id, "x2 waits behind x1");
        assert!(store.claim_next(2).await.unwrap().is_none(), "the node is full");
        store.finish_task(&first, Verdict::Answer, "ok").await.unwrap();
        assert!(store.claim_next(1).await.unwrap().is_none(), "capacity 1: y1 still runs");
        let third = store.claim_next(2).await.unwrap().unwrap();
        assert_eq!(third.id, x2.id);
        let history = store.task_history(&x1.id).await.unwrap();
        assert_eq!(history[1].1, EventBody::TaskState { state: TaskState::Running });
        assert_eq!(store.task(&x1.id).await.unwrap().owner.as_deref(), Some("a"), "last ran on");
    }

    /// A pinned agent's tasks are claimed only by its node.
    async fn pinned_agents_run_only_on_their_node(db: Db) {
        let store = db.store().await;
        store.create_agent("p", "", None, None).await.unwrap();
        let pinned = store.pin_agent("p", Some("elsewhere")).await.unwrap();
        assert_eq!(pinned.node.as_deref(), Some("elsewhere"));
        let task = store.create_task("p", "job", "/w").await.unwrap();
        assert!(store.claim_next(4).await.unwrap().is_none());
        assert_eq!(store.agent("p").await.unwrap().node.as_deref(), Some("elsewhere"));
        store.pin_agent("p", Some("a")).await.unwrap();
        assert_eq!(store.claim_next(4).await.unwrap().unwrap().id, task.id);
        let unpinned = store.pin_agent("p", None).await.unwrap();
        assert_eq!(unpinned.node, None);
    }

    /// Subagents are claimed by their parent's node, outside the capacity.
    async fn subagents_follow_their_parent(db: Db) {
        let store = db.store().await;
        store.create_agent("x", "", None, None).await.unwrap();
        store.create_task("x", "parent", "/w").await.unwrap();
        let parent = store.claim_next(1).await.unwrap().unwrap();
        let child = store.create_subagent(&parent, "child", None).await.unwrap();
        let claimed = store.claim_subagents().await.unwrap();
        assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [child.id.as_str()]);
        assert_eq!(claimed[0].state(), TaskState::Running);
        assert!(store.claim_subagents().await.unwrap().is_empty());
    }

    /// Renewals renew only running tasks of this node and carry stop requests; the fence
    /// refuses a loop's append once the task is no longer its.
    async fn renewals_stops_and_the_fence(db: Db) {
        let store = db.store().await;
        store.create_agent("x", "", None, None).await.unwrap();
        store.create_agent("y", "", None, None).await.unwrap();
        store.create_task("x", "x1", "/w").await.unwrap();
        store.create_task("y", "y1", "/w").await.unwrap();
        let x1 = store.claim_next(4).await.unwrap().unwrap();
        let y1 = store.claim_next(4).await.unwrap().unwrap();
        let ids = vec![x1.id.clone(), y1.id.clone(), "t-gone".to_owned()];
        let renewal = store.renew(&ids).await.unwrap();
        assert_eq!(renewal.renewed.len(), 2);
        assert!(renewal.stop.is_empty());
        assert!(store.request_stop(&y1.id).await.unwrap());
        assert_eq!(store.renew(&ids).await.unwrap().stop, std::slice::from_ref(&y1.id));
        let note = EventBody::RuntimeNote { text: "n".into() };
        store.append_as_owner(&x1, &note).await.unwrap();
        store.finish_task(&x1, Verdict::Answer, "done").await.unwrap();
        let error = store.append_as_owner(&x1, &note).await.unwrap_err();
        assert!(matches!(error, StoreError::NotOwner(_)), "{error}");
        let error = store.finish_task(&x1, Verdict::Answer, "again").await.unwrap_err();
        assert!(matches!(error, StoreError::NotOwner(_)), "{error}");
        assert!(!store.request_stop(&x1.id).await.unwrap(), "it no longer runs");
        assert_eq!(store.renew(&ids).await.unwrap().renewed, std::slice::from_ref(&y1.id));
    }

    /// After a restart the node takes back its running tasks as `recovering`, except those
    /// it runs, within its capacity; a stop asked for meanwhile survives the recovery.
    async fn a_node_recovers_its_own_tasks(db: Db) {
        let store = db.store().await;
        for agent in ["x", "y", "z"] {
            store.create_agent(agent, "", None, None).await.unwrap();
            store.create_task(agent, "job", "/w").await.unwrap();
        }
        let x = store.claim_next(4).await.unwrap().unwrap();
        let y = store.claim_next(4).await.unwrap().unwrap();
        let z = store.claim_next(4).await.unwrap().unwrap();
        store.request_stop(&y.id).await.unwrap();
        assert!(store.claim_expired(0, &[]).await.unwrap().is_empty());
        let here = [x.id.clone()];
        let taken = store.claim_expired(2, &here).await.unwrap();
        assert_eq!(taken.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [y.id.as_str()]);
        assert_eq!(taken[0].state(), TaskState::Recovering);
        let history = store.task_history(&y.id).await.unwrap();
        assert_eq!(history.last().unwrap().1, EventBody::TaskState { state: TaskState::Recovering });
        let all = [x.id.clone(), y.id.clone()];
        let taken = store.claim_expired(4, &all).await.unwrap();
        assert_eq!(taken.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [z.id.as_str()]);
        assert_eq!(store.renew(&all).await.unwrap().stop, std::slice::from_ref(&y.id));
        store.set_task_state(&taken[0], TaskState::Running).await.unwrap();
        assert_eq!(store.task(&z.id).await.unwrap().state(), TaskState::Running);
    }
}
