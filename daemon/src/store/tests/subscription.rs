//! The subscription (replay from the store, then follow the bus) on both engines.

use std::sync::Arc;
use std::time::Duration;

use lazyboy_protocol::EventBody;
use tokio_util::sync::CancellationToken;

use super::on_both;
use crate::bus::CAPACITY;
use crate::store::{EventFilter, LiveEvent, Subscription};

on_both! {
    /// A subscriber that falls more than the channel's capacity behind re-reads the gap from
    /// the store: nothing dropped, nothing twice.
    async fn a_lagging_subscriber_recovers_from_the_store(db: Db) {
        let store = db.store().await;
        store.create_agent("a", "", None, None).await.unwrap();
        let shutdown = CancellationToken::new();
        let mut sub = Subscription::new(
            store.clone(),
            EventFilter::default(),
            Some(0),
            shutdown.clone(),
        )
        .await
        .unwrap();
        // Catch up first, so the rest must come through the (overflowing) channel.
        assert_eq!(sub.next_batch().await.unwrap().unwrap().len(), 1);
        assert!(sub.next_batch_now().await.is_none());
        let total = CAPACITY as i64 * 2 + 17;
        for i in 0..total {
            let body = EventBody::UserMessage {
                text: i.to_string(),
            };
            store.append_to_agent("a", &body).await.unwrap();
        }
        // Read until as many as were appended came (a deadline, not a quiet spell: a page of
        // the replay may take longer than `next_batch_now`'s pause on a loaded machine), then
        // compare: a gap or a repeat shows as a difference.
        let expected: Vec<i64> = (2..=total + 1).collect();
        let mut seqs = Vec::new();
        while seqs.len() < expected.len() {
            let batch = tokio::time::timeout(Duration::from_secs(60), sub.next_batch())
                .await
                .expect("the subscriber stalled")
                .unwrap()
                .unwrap();
            seqs.extend(batch.iter().map(|e| e.seq));
        }
        assert_eq!(seqs, expected);
        assert!(
            sub.next_batch_now().await.is_none(),
            "nothing after the last"
        );
        shutdown.cancel();
        assert!(
            sub.next_batch().await.unwrap().is_none(),
            "shutdown ends the subscription"
        );
    }

    /// Filtered subscriptions skip other agents' events in both replay and live paths.
    async fn filters_hold_in_replay_and_live(db: Db) {
        let store = db.store().await;
        let a = store.create_agent("a", "", None, None).await.unwrap();
        store.create_agent("b", "", None, None).await.unwrap();
        let filter = EventFilter {
            agent_id: Some(a.id),
            ..EventFilter::default()
        };
        let mut sub = Subscription::new(store.clone(), filter, Some(0), CancellationToken::new())
            .await
            .unwrap();
        let replayed = sub.next_batch().await.unwrap().unwrap();
        assert_eq!(replayed.iter().map(|e| e.seq).collect::<Vec<_>>(), [1]);
        let body = EventBody::UserMessage { text: "x".into() };
        store.append_to_agent("b", &body).await.unwrap();
        let (_, mine) = store.append_to_agent("a", &body).await.unwrap();
        let live = sub.next_batch().await.unwrap().unwrap();
        assert_eq!(live.iter().map(|e| e.seq).collect::<Vec<_>>(), [mine.seq]);
    }
}

impl Subscription {
    /// The next batch if one is ready without waiting for new appends.
    async fn next_batch_now(&mut self) -> Option<Vec<Arc<LiveEvent>>> {
        tokio::time::timeout(Duration::from_millis(200), self.next_batch())
            .await
            .ok()
            .map(|r| r.unwrap().unwrap())
    }
}
