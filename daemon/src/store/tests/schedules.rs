//! Schedules: a slot fires once (a second firing of the same read is stale), pause and
//! resume, removal.

use super::on_both;
use crate::store::{FireOutcome, Firing};

on_both! {
    async fn a_slot_fires_once_and_pauses_win(db: Db) {
        let store = db.store().await;
        store.create_agent("ops", "", None, None).await.unwrap();
        let schedule = store.create_schedule("ops", "* * * * *", "tick", false, Some(1_000)).await.unwrap();
        assert_eq!(store.next_schedule_due().await.unwrap(), Some(1_000));
        let due = store.due_schedules(2_000).await.unwrap();
        assert_eq!(due.len(), 1);
        let run = Firing::Run { workspace: "/w", missed: true };
        let fired = store.fire_schedule(&due[0], run, Some(60_000)).await.unwrap();
        let FireOutcome::Fired(task) = fired else { panic!("{fired:?}") };
        assert_eq!(store.task(&task).await.unwrap().objective, "tick");
        assert!(matches!(store.fire_schedule(&due[0], run, Some(60_000)).await.unwrap(), FireOutcome::Stale));
        assert!(store.due_schedules(2_000).await.unwrap().is_empty());
        let paused = store.set_schedule_paused(&schedule.id, true, None).await.unwrap();
        assert!(paused.paused && paused.next_run_at_ms.is_none());
        assert_eq!(store.next_schedule_due().await.unwrap(), None);
        let row = store.schedule(&schedule.id).await.unwrap();
        assert!(row.paused && row.last_run_at_ms.is_some());
        store.set_schedule_paused(&schedule.id, false, Some(5)).await.unwrap();
        let skip = Firing::Skip { reason: "missed" };
        let due = store.due_schedules(10).await.unwrap();
        assert!(matches!(store.fire_schedule(&due[0], skip, Some(99)).await.unwrap(), FireOutcome::Skipped));
        assert_eq!(store.schedules(Some("ops")).await.unwrap()[0].next_run_at_ms, Some(99));
        store.delete_schedule(&schedule.id).await.unwrap();
        assert!(store.schedules(None).await.unwrap().is_empty());
    }
}
