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

/// The same churn with two daemons on one PostgreSQL database: half the writers post to
/// each, and every subscriber reconnects to the other daemon each time, so its cursor moves
/// between daemons: each still sees every event of both writers once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_daemons_one_database_every_subscriber_sees_both_writers_once_in_order() {
    const EVENTS: usize = 4_000;
    let url = lazyboy_tests::fleet::postgres_url().await;
    let lease = Duration::from_secs(5);
    let a = lazyboy_tests::fleet::start_node("", &url, "a", lease).await;
    let b = lazyboy_tests::fleet::start_node("", &url, "b", lease).await;
    for w in 0..WRITERS {
        add_agent(&a, &format!("w{w}")).await;
    }
    let first = all_events(&b, 0).await.last().unwrap().seq;
    let urls = [a.url("/api/events"), b.url("/api/events")];
    // Each daemon has its own home, so its own token.
    let clients = [a.http.clone(), b.http.clone()];

    let subscribers: Vec<_> = (0..SUBSCRIBERS)
        .map(|s| {
            let clients = clients.clone();
            let urls = urls.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut last = first;
                let mut reconnects = 0usize;
                let mut budget = 37 + s * 53;
                while seen.len() < EVENTS {
                    let node = (s + reconnects) % 2;
                    let mut stream =
                        Box::pin(sse::connect(&clients[node], &urls[node], Some(last)).await);
                    let mut taken = 0;
                    while taken < budget {
                        let Some(message) = stream.next().await else {
                            break;
                        };
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
            let (http, base) = if w % 2 == 0 {
                (a.http.clone(), a.url(""))
            } else {
                (b.http.clone(), b.url(""))
            };
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0..EVENTS / WRITERS {
                    let seq = post_message(&http, &base, &format!("w{w}"), &format!("{w}/{i}"))
                        .await
                        .unwrap();
                    acked.push(seq);
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
    let before = acked.len();
    acked.dedup();
    assert_eq!(acked.len(), before, "two appends got one seq");

    for subscriber in subscribers {
        let (seen, reconnects) = tokio::time::timeout(Duration::from_secs(120), subscriber)
            .await
            .expect("a subscriber stalled")
            .unwrap();
        assert!(reconnects > 10, "only {reconnects} reconnects");
        assert_eq!(
            seen, acked,
            "a subscriber missed, repeated or reordered events"
        );
    }
    a.stop();
    b.stop();
}
