//! The dashboard's projections (`store/projections/`): the conversation folded and paged,
//! the status board, and each projection query seeking its partial index, on both backends.

use std::path::Path;

use lazyboy_protocol::{
    ConversationItem, EventBody, PlanStep, StepStatus, TaskState, ToolStatus, Verdict,
};

use super::on_both;
use crate::store::{Store, TaskRow};

async fn append(store: &Store, task: &TaskRow, body: EventBody) {
    store.append_to_task(task, &body).await.unwrap();
}

/// One task of `ops`: a note, work, a message, a plan, a question answered, more work, done.
async fn history(store: &Store) -> TaskRow {
    store.create_agent("ops", "", None, None).await.unwrap();
    let note = EventBody::UserMessage {
        text: "hello".into(),
    };
    store.append_to_agent("ops", &note).await.unwrap();
    let queued = store.create_task("ops", "build it", "/tmp").await.unwrap();
    let task = store.claim_next(1).await.unwrap().unwrap();
    assert_eq!(task.id, queued.id);
    let call = |id: &str, name: &str, effect| EventBody::ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
        effect: Some(effect),
    };
    let result = |id: &str, name: &str, output: &str| EventBody::ToolResult {
        call_id: id.into(),
        name: name.into(),
        status: ToolStatus::Ok,
        output: output.into(),
        progress: false,
    };
    use lazyboy_protocol::Effect::*;
    append(store, &task, call("c1", "exec_command", Command)).await;
    append(store, &task, result("c1", "exec_command", "ok")).await;
    append(store, &task, call("c2", "write_file", WorkspaceWrite)).await;
    append(store, &task, result("c2", "write_file", "written")).await;
    let said = EventBody::AgentMessage {
        text: "started".into(),
    };
    append(store, &task, said).await;
    let plan = EventBody::PlanUpdated {
        steps: vec![
            PlanStep {
                step: "write".into(),
                status: StepStatus::Completed,
            },
            PlanStep {
                step: "check".into(),
                status: StepStatus::InProgress,
            },
        ],
        explanation: None,
    };
    append(store, &task, plan).await;
    let ask = EventBody::Question {
        call_id: "q1".into(),
        question: "Which?".into(),
        options: vec!["A".into(), "B".into()],
        takeover: None,
        approval: None,
    };
    append(store, &task, ask).await;
    store
        .set_task_state(&task, TaskState::WaitingForHuman)
        .await
        .unwrap();
    task
}

async fn finish(store: &Store, task: &TaskRow) {
    let answer = EventBody::ToolResult {
        call_id: "q1".into(),
        name: "request_user_input".into(),
        status: ToolStatus::Ok,
        output: "The person answered: B".into(),
        progress: false,
    };
    // As an answer does: the task is queued with its answer, then claimed again.
    store
        .requeue(task, TaskState::WaitingForHuman, &answer)
        .await
        .unwrap();
    let task = &store.claim_next(1).await.unwrap().unwrap();
    for i in 0..3 {
        let id = format!("r{i}");
        let read = EventBody::ToolCall {
            call_id: id.clone(),
            name: "read_file".into(),
            arguments: "{}".into(),
            effect: Some(lazyboy_protocol::Effect::Read),
        };
        append(store, task, read).await;
        let delta = EventBody::AssistantDelta { text: "…".into() };
        append(store, task, delta).await;
    }
    store
        .finish_task(task, Verdict::Answer, "all good")
        .await
        .unwrap();
}

on_both! {
    async fn the_conversation_folds_and_pages_without_splitting_items(db: Db) {
        let store = db.store().await;
        let task = history(&store).await;
        finish(&store, &task).await;
        let whole = store.conversation("ops", None, 200).await.unwrap();
        assert_eq!(whole.older, None);
        let kinds: Vec<&str> = whole
            .items
            .iter()
            .rev()
            .map(|item| match item {
                ConversationItem::UserMessage { .. } => "user",
                ConversationItem::TaskStarted { .. } => "task",
                ConversationItem::AgentMessage { .. } => "agent",
                ConversationItem::Work(_) => "work",
                ConversationItem::Plan { .. } => "plan",
                ConversationItem::Question { .. } => "question",
                ConversationItem::Verdict { .. } => "verdict",
                ConversationItem::Note { .. } => "note",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user", "task", "work", "agent", "plan", "question", "work", "verdict"
            ]
        );
        // Paging two at a time gives the same items, and never cuts one in half.
        let mut paged = Vec::new();
        let mut before = None;
        loop {
            let page = store.conversation("ops", before, 2).await.unwrap();
            assert!(page.items.len() <= 2);
            paged.extend(page.items);
            match page.older {
                Some(older) => before = Some(older),
                None => break,
            }
        }
        assert_eq!(paged, whole.items);
        // The question is answered even when its answer is on a newer page than it.
        let question = paged
            .iter()
            .find(|i| matches!(i, ConversationItem::Question { .. }))
            .unwrap();
        assert!(
            matches!(question, ConversationItem::Question { answer: Some(a), .. } if a.ends_with(": B"))
        );
    }

    async fn the_state_shows_plan_step_message_question_and_tasks(db: Db) {
        let store = db.store().await;
        let task = history(&store).await;
        store.create_agent("idle", "", None, None).await.unwrap();
        let state = store.dashboard_state(Path::new("/w")).await.unwrap();
        assert_eq!(state.seq, store.last_seq().await.unwrap());
        let names: Vec<&str> = state.agents.iter().map(|a| a.agent.name.as_str()).collect();
        assert_eq!(names, ["idle", "ops"]);
        let ops = &state.agents[1];
        assert_eq!(ops.plan_step.as_deref(), Some("check"));
        assert_eq!(ops.last_message.as_ref().unwrap().text, "started");
        assert!(ops.waiting);
        assert_eq!(ops.tasks.len(), 1);
        assert_eq!(state.questions.len(), 1);
        assert_eq!(state.questions[0].options, ["A", "B"]);
        assert!(!state.agents[0].waiting && state.agents[0].tasks.is_empty());
        finish(&store, &task).await;
        let state = store.dashboard_state(Path::new("/w")).await.unwrap();
        assert!(state.questions.is_empty() && !state.agents[1].waiting);
        assert_eq!(
            state.agents[1].plan_step, None,
            "no current task, no plan step"
        );
    }

    /// Every projection query seeks an index; none scans the events table (on PostgreSQL
    /// with sequential scans off, so a usable partial index shows up on a small table). The
    /// statements explained are the ones the board runs.
    async fn projection_queries_use_their_indexes(db: Db) {
        use super::Bind::{Int, Text};
        let store = db.store().await;
        use crate::store::sql::projections::{MESSAGES, QUESTIONS, box_locks_sql, plans_sql};
        let (messages, plans, questions) = (MESSAGES, plans_sql(), QUESTIONS);
        let exclusive = if db.is_postgres() { "FALSE" } else { "TRUE" };
        let (boxes, box_binds) = (box_locks_sql(exclusive), vec![Text("node-1")]);
        let page_sql = crate::store::projections::conversation::page_sql();
        let page = store.explain(&page_sql, &[Int(1), Int(i64::MAX), Int(10)]).await;
        assert!(page.contains("events_conversation"), "{page}");
        let message = store.explain(messages, &[]).await;
        assert!(message.contains("events_agent_messages"), "{message}");
        let question = store.explain(questions, &[]).await;
        assert!(question.contains("events_task_questions"), "{question}");
        let plan = store.explain(&plans, &[]).await;
        assert!(plan.contains("events_task_plans"), "{plan}");
        let lock = store.explain(&boxes, &box_binds).await;
        assert!(lock.contains("events_box_lock"), "{lock}");
    }
}
