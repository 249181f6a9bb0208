//! The event log: what is written reads back byte for byte, the log refuses changes, reads
//! filter by agent and task.

use lazyboy_protocol::{Event, EventBody};

use super::on_both;
use crate::store::EventFilter;

on_both! {
    /// What an append publishes and what a later read returns are the same bytes, and they
    /// decode as the protocol's `Event`.
    async fn written_and_read_events_are_identical(db: Db) {
        let store = db.store().await;
        store.create_agent("ops", "", Some("m"), None).await.unwrap();
        let text = "quotes \" and \\ and\nnewlines, unicode é ✓, and </script>";
        let body = EventBody::UserMessage { text: text.into() };
        let (_, written) = store.append_to_agent("ops", &body).await.unwrap();
        let read = store.events_after(1, &EventFilter::default(), 10).await.unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].frame(), written.frame());
        let event: Event = serde_json::from_str(written.json()).unwrap();
        assert_eq!(
            (event.seq, event.agent.as_str(), event.task.as_deref()),
            (2, "ops", None)
        );
        assert_eq!(event.body(), Some(body));
        let frame = std::str::from_utf8(written.frame()).unwrap();
        assert!(frame.starts_with("id: 2\ndata: {") && frame.ends_with("}\n\n"));
        assert_eq!(frame.matches('\n').count(), 3, "one data line");
        assert_eq!(store.last_seq().await.unwrap(), 2);
    }

    /// The database itself refuses to change or remove an event.
    async fn the_log_is_append_only(db: Db) {
        let store = db.store().await;
        store.create_agent("ops", "", None, None).await.unwrap();
        for sql in [
            "UPDATE events SET kind = 'x'",
            "DELETE FROM events",
        ] {
            let error = store.raw(sql).await.unwrap_err().to_string();
            assert!(error.contains("append-only"), "{sql}: {error}");
        }
        if db.is_postgres() {
            let error = store.raw("TRUNCATE events CASCADE").await.unwrap_err().to_string();
            assert!(error.contains("append-only"), "{error}");
        }
        assert_eq!(store.last_seq().await.unwrap(), 1);
    }

    /// Reads by agent and by task return only theirs, in seq order.
    async fn reads_filter_by_agent_and_task(db: Db) {
        let store = db.store().await;
        let a = store.create_agent("a", "", None, None).await.unwrap();
        store.create_agent("b", "", None, None).await.unwrap();
        let task = store.create_task("a", "job", "/tmp").await.unwrap();
        let note = EventBody::UserMessage { text: "n".into() };
        store.append_to_agent("b", &note).await.unwrap();
        store.append_to_task(&task, &note).await.unwrap();
        let of_a = EventFilter { agent_id: Some(a.id), ..EventFilter::default() };
        let seqs: Vec<i64> = store.events_after(0, &of_a, 100).await.unwrap()
            .iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 3, 5]);
        let of_task = EventFilter { task: Some(task.id.as_str().into()), ..EventFilter::default() };
        let seqs: Vec<i64> = store.events_after(0, &of_task, 100).await.unwrap()
            .iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [3, 5]);
        let all = store.events_after(2, &EventFilter::default(), 2).await.unwrap();
        assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4]);
    }
}
