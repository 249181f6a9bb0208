//! SSE replay under churn: subscribers that keep disconnecting and resuming with
//! Last-Event-ID, while several writers append 10,000 events, see every seq exactly once and
//! in order.

use std::time::Duration;

use futures_util::StreamExt;
use lazyboy_tests::{TestDaemon, add_agent, all_events, post_message, sse};

const WRITERS: usize = 8;
const EVENTS: usize = 10_000;
const SUBSCRIBERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resuming_subscribers_see_every_event_once_in_order() {
    let daemon = TestDaemon::start().await;
    for w in 0..WRITERS {
        add_agent(&daemon, &format!("w{w}")).await;
    }
    let first = all_events(&daemon, 0).await.last().unwrap().seq;
    let base = daemon.url("");

    let subscribers: Vec<_> = (0..SUBSCRIBERS)
        .map(|s| {
            let http = daemon.http.clone();
            let url = daemon.url("/api/events");
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut last = first;
                let mut reconnects = 0u32;
                // Each subscriber drops its connection after a different, varying count.
                let mut budget = 37 + s * 53;
                while seen.len() < EVENTS {
                    let mut stream = Box::pin(sse::connect(&http, &url, Some(last)).await);
                    let mut taken = 0;
                    while taken < budget {
                        let Some(message) = stream.next().await else {
                            break;
                        };
                        assert_eq!(message.id, message.event.seq.to_string());
                        seen.push(message.event.seq);
                        last = message.event.seq;
                        taken += 1;
                        if seen.len() == EVENTS {
                            break;
                        }
                    }
                    reconnects += 1;
                    budget = 1 + (budget * 7 + 13) % 400;
                }
                (seen, reconnects)
            })
        })
        .collect();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let http = daemon.http.clone();
            let base = base.clone();
            tokio::spawn(async move {
                let agent = format!("w{w}");
                let mut acked = Vec::new();
                for i in 0..EVENTS / WRITERS {
                    acked.push(
                        post_message(&http, &base, &agent, &format!("{w}/{i}"))
                            .await
                            .unwrap(),
                    );
                }
                acked
            })
        })
        .collect();
    let mut acked: Vec<i64> = Vec::new();
    for writer in writers {
        acked.extend(writer.await.unwrap());
    }
    acked.sort_unstable();
    let expected: Vec<i64> = (first + 1..=first + EVENTS as i64).collect();
    assert_eq!(acked, expected, "appends got gap-free, unique seqs");

    for subscriber in subscribers {
        let (seen, reconnects) = tokio::time::timeout(Duration::from_secs(60), subscriber)
            .await
            .expect("a subscriber stalled")
            .unwrap();
        assert!(reconnects > 20, "only {reconnects} reconnects");
        assert_eq!(
            seen, expected,
            "a subscriber missed, repeated or reordered events"
        );
    }
    daemon.stop();
}
