//! `/api/agents/{name}/tasks` and `/api/tasks/{id}`: hand an agent a job, look at it, stop it,
//! follow its events.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use lazyboy_protocol::{
    AnswerTask, ApproveCall, CreateTask, Decision, DenyCall, Task, TaskAccepted, TaskList,
    TaskState,
};

use super::events::{StreamQuery, resume_point, stream_from};
use crate::agent::AnswerError;
use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::store::EventFilter;

pub async fn create(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<CreateTask>,
) -> Result<(StatusCode, Json<TaskAccepted>), ApiError> {
    let task = state
        .runtime
        .create_task(&name, &request.objective, request.workspace.as_deref())
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(TaskAccepted {
            task: task.id,
            thread: task.thread,
        }),
    ))
}

#[derive(Debug, serde::Deserialize)]
pub struct ListQuery {
    agent: Option<String>,
    state: Option<String>,
    limit: Option<u32>,
}

/// `GET /api/tasks?agent=&state=`: newest first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<TaskList>, ApiError> {
    let wanted = match query.state.as_deref() {
        Some(name) => Some(
            TaskState::parse(name)
                .ok_or_else(|| ApiError::bad_request(format!("unknown task state {name:?}")))?,
        ),
        None => None,
    };
    let limit = query.limit.unwrap_or(200).clamp(1, 1000);
    let tasks = state
        .store
        .list_tasks(query.agent.as_deref(), wanted, limit)
        .await?;
    Ok(Json(TaskList {
        tasks: tasks.into_iter().map(Task::from).collect(),
    }))
}

pub async fn show(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Task>, ApiError> {
    Ok(Json(state.store.task(&id).await?.into()))
}

pub async fn stop(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let task = state.store.task(&id).await?;
    state.runtime.stop(&task.id).await?;
    let task = state.store.task(&id).await?;
    Ok((StatusCode::ACCEPTED, Json(task.into())))
}

pub async fn answer(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<AnswerTask>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    state.runtime.answer(&id, &request).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(state.store.task(&id).await?.into()),
    ))
}

/// `POST /api/tasks/{id}/approve`: the call the task waits on runs (409 when its question is
/// not an approval).
pub async fn approve(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<ApproveCall>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let decision = if request.for_task {
        Decision::ApproveForTask
    } else {
        Decision::Approve
    };
    state.runtime.decide(&id, decision, None).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(state.store.task(&id).await?.into()),
    ))
}

/// `POST /api/tasks/{id}/deny`: the call never runs; the model reads the reason.
pub async fn deny(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<DenyCall>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    state
        .runtime
        .decide(&id, Decision::Deny, request.reason)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(state.store.task(&id).await?.into()),
    ))
}

pub async fn continue_task(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    match state.runtime.continue_task(&id).await {
        Ok(()) => Ok((
            StatusCode::ACCEPTED,
            Json(state.store.task(&id).await?.into()),
        )),
        Err(AnswerError::Store(error)) => Err(error.into()),
        Err(error) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_finished",
            format!("only a task that has ended can be continued: {error}"),
        )),
    }
}

pub async fn events(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let after = resume_point(&headers, query)?;
    let task = state.store.task(&id).await?;
    // A terminal follows this task (`lazyboy run`): its end is shown there, not notified.
    let hold = state.notify.follow(&task.id);
    let filter = EventFilter {
        task: Some(task.id.into()),
        ..EventFilter::default()
    };
    stream_from(state, after, filter, Some(hold)).await
}
