//! `kill -9` while writers append: after restart every acknowledged event is in the log, seq
//! stays monotonic, and the stale socket and lock do not block the new daemon.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lazyboy_protocol::paths;
use lazyboy_tests::{TestDaemon, add_agent, all_events, post_message, wait_for};
use tokio::sync::Mutex;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_events_survive_kill_9() {
    let mut daemon = TestDaemon::start().await;
    for w in 0..4 {
        add_agent(&daemon, &format!("w{w}")).await;
    }
    let base = daemon.url("");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, base, acked, failed) = (
                daemon.http.clone(),
                base.clone(),
                acked.clone(),
                failed.clone(),
            );
            tokio::spawn(async move {
                for i in 0.. {
                    match post_message(&http, &base, &format!("w{w}"), &format!("{w}/{i}")).await {
                        Ok(seq) => acked.lock().await.push(seq),
                        Err(_) => {
                            failed.store(true, Ordering::SeqCst);
                            return;
                        }
                    }
                }
            })
        })
        .collect();
    // Let real traffic build up, then kill in the middle of it.
    wait_for(
        std::time::Duration::from_secs(30),
        "500 acknowledged appends",
        || {
            let acked = acked.clone();
            async move { (acked.lock().await.len() >= 500).then_some(()) }
        },
    )
    .await;
    daemon.kill9();
    for writer in writers {
        writer.await.unwrap();
    }
    assert!(failed.load(Ordering::SeqCst), "writers noticed the kill");
    let acked = acked.lock().await.clone();
    assert!(
        daemon.home().join(paths::SOCKET).exists(),
        "kill -9 leaves the socket file behind"
    );
    assert!(
        daemon.home().join(paths::LOCK).exists(),
        "and the lock file"
    );

    daemon.restart().await;
    let events = all_events(&daemon, 0).await;
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seq is strictly increasing"
    );
    let present: std::collections::HashSet<i64> = seqs.iter().copied().collect();
    let lost: Vec<_> = acked.iter().filter(|s| !present.contains(s)).collect();
    assert!(lost.is_empty(), "acknowledged events lost: {lost:?}");

    // The API answers and new events continue the sequence.
    let next = post_message(&daemon.http, &daemon.url(""), "w0", "after")
        .await
        .unwrap();
    assert!(next > *seqs.last().unwrap());
    daemon.stop();
}
