//! Several nodes on one PostgreSQL database: claims that never overlap, a lease taken over
//! and its old owner fenced, a schedule slot fired once, one event order seen by every node,
//! node names held by one live process, each node's box lock its own.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use lazyboy_protocol::{BoxLockAction, EventBody, TaskState, Verdict};
use tokio_util::sync::CancellationToken;

use super::on_postgres;
use crate::store::Subscription;
use crate::store::{EventFilter, FireOutcome, Firing, StoreError};

on_postgres! {
    /// Two nodes race for 120 queued tasks over 8 agents: each is claimed once, and no agent
    /// ever has two tasks running (replayed from the log, whose order is commit order).
    async fn two_nodes_never_claim_one_task_twice(db: Db) {
        let a = db.node("a", 30_000).await;
        let b = db.node("b", 30_000).await;
        let mut all = HashSet::new();
        for i in 0..8 {
            a.create_agent(&format!("g{i}"), "", None, None).await.unwrap();
        }
        for n in 0..120 {
            let task = a.create_task(&format!("g{}", n % 8), "job", "/w").await.unwrap();
            all.insert(task.id);
        }
        let worker = |store: crate::store::Store| tokio::spawn(async move {
            let mut mine = Vec::new();
            let mut idle = 0;
            while idle < 20 {
                match store.claim_next(3).await.unwrap() {
                    Some(task) => {
                        idle = 0;
                        store.finish_task(&task, Verdict::Answer, "ok").await.unwrap();
                        mine.push(task.id);
                    }
                    None => {
                        idle += 1;
                        tokio::task::yield_now().await;
                    }
                }
            }
            mine
        });
        let (from_a, from_b) = tokio::join!(worker(a.clone()), worker(b.clone()));
        let (from_a, from_b) = (from_a.unwrap(), from_b.unwrap());
        assert!(!from_a.is_empty() && !from_b.is_empty(), "both nodes claimed some");
        let mut claimed: Vec<String> = from_a.into_iter().chain(from_b).collect();
        claimed.sort();
        let before = claimed.len();
        claimed.dedup();
        assert_eq!(before, claimed.len(), "a task was claimed twice");
        assert_eq!(claimed.into_iter().collect::<HashSet<_>>(), all);

        let events = a.events_after(0, &EventFilter::default(), 100_000).await.unwrap();
        let mut running: HashSet<i64> = HashSet::new();
        for event in &events {
            let parsed: lazyboy_protocol::Event = serde_json::from_str(event.json()).unwrap();
            match parsed.body() {
                Some(EventBody::TaskState { state: TaskState::Running }) => {
                    assert!(running.insert(event.agent_id), "two tasks of one agent ran at once");
                }
                Some(EventBody::TaskFinished { .. }) => {
                    running.remove(&event.agent_id);
                }
                _ => {}
            }
        }
    }

    /// A lease that runs out is taken over by the next claim; the old owner can no longer
    /// renew it, append to it or change its state.
    async fn an_expired_lease_is_taken_over_and_its_old_owner_fenced(db: Db) {
        let a = db.node("a", 300).await;
        let b = db.node("b", 300).await;
        a.create_agent("x", "", None, None).await.unwrap();
        a.create_task("x", "job", "/w").await.unwrap();
        let task = a.claim_next(1).await.unwrap().unwrap();
        assert!(b.claim_expired(4, &[]).await.unwrap().is_empty(), "a's lease is fresh");
        assert!(b.claim_next(4).await.unwrap().is_none(), "x runs on a");
        let deadline = Instant::now() + Duration::from_secs(5);
        let taken = loop {
            let taken = b.claim_expired(4, &[]).await.unwrap();
            if !taken.is_empty() {
                break taken;
            }
            assert!(Instant::now() < deadline, "the lease never ran out");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!((taken[0].id.as_str(), taken[0].state()), (task.id.as_str(), TaskState::Recovering));
        assert_eq!(taken[0].owner.as_deref(), Some("b"));
        assert!(a.renew(std::slice::from_ref(&task.id)).await.unwrap().renewed.is_empty());
        let note = EventBody::RuntimeNote { text: "late".into() };
        assert!(matches!(a.append_as_owner(&task, &note).await, Err(StoreError::NotOwner(_))));
        assert!(matches!(
            a.finish_task(&task, Verdict::Answer, "mine").await,
            Err(StoreError::NotOwner(_))
        ));
        b.set_task_state(&taken[0], TaskState::Running).await.unwrap();
        b.finish_task(&taken[0], Verdict::Answer, "recovered").await.unwrap();
        let done = a.task(&task.id).await.unwrap();
        assert_eq!(done.final_message.as_deref(), Some("recovered"));
    }

    /// Both nodes' timers handle the same due slot at once: it fires exactly once.
    async fn a_schedule_slot_fires_once_across_nodes(db: Db) {
        let a = db.node("a", 30_000).await;
        let b = db.node("b", 30_000).await;
        a.create_agent("x", "", None, None).await.unwrap();
        for round in 0..20i64 {
            let schedule = a
                .create_schedule("x", "* * * * *", "tick", false, Some(1_000 + round))
                .await
                .unwrap();
            let (row_a, row_b) = (
                a.due_schedules(i64::MAX).await.unwrap().pop().unwrap(),
                b.due_schedules(i64::MAX).await.unwrap().pop().unwrap(),
            );
            assert_eq!(row_a.id, schedule.id);
            let run = Firing::Run { workspace: "/w", missed: false };
            let (fa, fb) = tokio::join!(
                a.fire_schedule(&row_a, run, Some(i64::MAX - 1)),
                b.fire_schedule(&row_b, run, Some(i64::MAX - 1)),
            );
            let fired = [fa.unwrap(), fb.unwrap()]
                .iter()
                .filter(|o| matches!(o, FireOutcome::Fired(_)))
                .count();
            assert_eq!(fired, 1, "round {round}");
            a.delete_schedule(&schedule.id).await.unwrap();
        }
        assert_eq!(a.list_tasks(Some("x"), None, 100).await.unwrap().len(), 20);
    }

    /// Two nodes append at once; a subscriber on one sees every event of both, once, in
    /// seq order, with no gap (its bus is fed by the feed's tailer for the other's events).
    async fn a_subscriber_on_one_node_sees_both_writers_in_order(db: Db) {
        let a = db.node("a", 30_000).await;
        let b = db.node("b", 30_000).await;
        a.create_agent("x", "", None, None).await.unwrap();
        b.create_agent("y", "", None, None).await.unwrap();
        let stop = CancellationToken::new();
        let mut sub = Subscription::new(a.clone(), EventFilter::default(), Some(0), stop.clone())
            .await
            .unwrap();
        let writer = |store: crate::store::Store, agent: &'static str| tokio::spawn(async move {
            for i in 0..300 {
                let body = EventBody::UserMessage { text: i.to_string() };
                store.append_to_agent(agent, &body).await.unwrap();
            }
        });
        let (wa, wb) = tokio::join!(writer(a.clone(), "x"), writer(b.clone(), "y"));
        wa.unwrap();
        wb.unwrap();
        let last = b.last_seq().await.unwrap();
        assert_eq!(last, 602);
        let mut seen = Vec::new();
        while seen.last().copied().unwrap_or(0) < last {
            let batch = tokio::time::timeout(Duration::from_secs(10), sub.next_batch())
                .await
                .expect("the subscriber stalled")
                .unwrap()
                .unwrap();
            seen.extend(batch.iter().map(|e| e.seq));
        }
        assert_eq!(seen, (1..=last).collect::<Vec<_>>());
        stop.cancel();
    }

    /// A node name is held by one live process; a stopped one frees it.
    async fn a_node_name_is_held_by_one_live_process(db: Db) {
        let first = db.node("n", 30_000).await;
        let second = db.node("n", 30_000).await;
        first.register_node("i1", 1, "http://a/", "0").await.unwrap();
        let error = second.register_node("i2", 2, "http://b/", "0").await.unwrap_err();
        assert!(matches!(error, StoreError::NodeInUse(_)), "{error}");
        first.node_heartbeat("i1").await.unwrap();
        first.node_stopped("i1").await.unwrap();
        second.register_node("i2", 2, "http://b/", "0").await.unwrap();
        second.create_agent("x", "", None, None).await.unwrap();
        let task = second.create_task("x", "job", "/w").await.unwrap();
        second.claim_next(1).await.unwrap().unwrap();
        let nodes = second.nodes().await.unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!((nodes[0].pid, nodes[0].stopped_at_ms), (2, None));
        assert_eq!(nodes[0].running, [task.id]);
    }

    /// Each node has its own box: its lock is rebuilt from the box_lock events of the tasks
    /// that last ran on it, never from another node's.
    async fn each_node_rebuilds_its_own_box_lock(db: Db) {
        let a = db.node("a", 30_000).await;
        let b = db.node("b", 30_000).await;
        for name in ["x", "y"] {
            a.create_agent(name, "", None, None).await.unwrap();
            a.create_task(name, "job", "/w").await.unwrap();
        }
        let on_a = a.claim_next(1).await.unwrap().unwrap();
        let on_b = b.claim_next(1).await.unwrap().unwrap();
        for task in [&on_a, &on_b] {
            let body = EventBody::BoxLock {
                action: BoxLockAction::Acquired,
                agent: task.agent.clone(),
                task: task.id.clone(),
                person: false,
                holder: None,
            };
            a.append_to_task(task, &body).await.unwrap();
        }
        let tasks = |events: Vec<(String, serde_json::Value, i64)>| {
            events.into_iter().map(|(task, _, _)| task).collect::<Vec<_>>()
        };
        assert_eq!(tasks(a.box_lock_events().await.unwrap()), std::slice::from_ref(&on_a.id));
        assert_eq!(tasks(b.box_lock_events().await.unwrap()), std::slice::from_ref(&on_b.id));
    }
}
