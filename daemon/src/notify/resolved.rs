//! Whether a question (a `question`, `approval` or `takeover` notification's source) is
//! still open, decided from the task's log and its final state, never from whether the
//! task's row says `waiting_for_human` yet.
//!
//! Why not the row: the turn appends the question during its step and marks the task
//! waiting only after the step returns. The notifier follows the log, so it regularly reads
//! the question while the row still says `running`; taking that for "answered" skipped the
//! notification, and under load (a full test run, a burst of questions) some were never
//! sent. A question is closed by what closes it in the log: its call's result (the
//! person's answer), a decision on its call (an approval), or the task's end.

use lazyboy_protocol::{Event, EventBody};

use crate::store::{Store, StoreError};

/// Whether the question `source` asked no longer needs the person: answered, decided, or
/// its task ended. `false` for an event that is not a task's question.
pub(super) async fn resolved(store: &Store, source: &Event) -> Result<bool, StoreError> {
    let (Some(task), Some(EventBody::Question { call_id, .. })) = (&source.task, source.body())
    else {
        return Ok(false);
    };
    if store.task(task).await?.state().is_final() {
        return Ok(true);
    }
    let later = store.task_history_after(task, source.seq).await?;
    Ok(later.iter().any(|(_, body)| match body {
        EventBody::ToolResult { call_id: c, .. }
        | EventBody::ApprovalDecided { call_id: c, .. } => *c == call_id,
        EventBody::TaskFinished { .. } => true,
        _ => false,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use lazyboy_protocol::{TaskState, ToolStatus, Verdict};

    use super::*;
    use crate::bus::Bus;
    use crate::store::TaskRow;

    async fn asked(store: &Store) -> (TaskRow, Event) {
        store.create_agent("a", "", None, None).await.unwrap();
        store.create_task("a", "ask", "/tmp").await.unwrap();
        let task = store.claim_next(1).await.unwrap().unwrap();
        let question = EventBody::Question {
            call_id: "q1".into(),
            question: "Deploy?".into(),
            options: vec![],
            takeover: None,
            approval: None,
        };
        let live = store.append_to_task(&task, &question).await.unwrap();
        (task, serde_json::from_str(live.json()).unwrap())
    }

    #[tokio::test]
    async fn a_question_read_before_its_task_is_marked_waiting_is_open() {
        let (_dir, store) = store().await;
        let (task, question) = asked(&store).await;
        // The turn has appended the question; the row still says running.
        assert_eq!(
            store.task(&task.id).await.unwrap().state(),
            TaskState::Running
        );
        assert!(!resolved(&store, &question).await.unwrap());
        store
            .set_task_state(&task, TaskState::WaitingForHuman)
            .await
            .unwrap();
        assert!(!resolved(&store, &question).await.unwrap());
    }

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), Bus::default())
            .await
            .unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn the_persons_answer_closes_it() {
        let (_dir, store) = store().await;
        let (task, question) = asked(&store).await;
        store
            .set_task_state(&task, TaskState::WaitingForHuman)
            .await
            .unwrap();
        let answer = EventBody::ToolResult {
            call_id: "q1".into(),
            name: "request_user_input".into(),
            status: ToolStatus::Ok,
            output: "yes".into(),
            progress: false,
        };
        // As an answer does: the task is queued again with its answer, in one transaction.
        store
            .requeue(&task, TaskState::WaitingForHuman, &answer)
            .await
            .unwrap();
        assert!(resolved(&store, &question).await.unwrap());
    }

    #[tokio::test]
    async fn the_tasks_end_closes_it() {
        let (_dir, store) = store().await;
        let (task, question) = asked(&store).await;
        store
            .finish_task(&task, Verdict::Failed, "gave up")
            .await
            .unwrap();
        assert!(resolved(&store, &question).await.unwrap());
    }
}
