//! `/api/agents/{name}/schedules` and `/api/schedules/{id}`: add, list, remove, pause and
//! resume the cron schedules that hand an agent a job at every slot.
//!
//! A route changes the row (and logs its event) first, then pokes the timer, which re-reads
//! the schedules; the timer alone fires slots.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{CreateSchedule, Schedule, ScheduleList};

use crate::agent::schedules::first_slot;
use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::store::now_ms;

/// `POST /api/agents/{name}/schedules`: 201 with the schedule; 400 naming what is wrong
/// with the expression, and nothing stored.
pub async fn create(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<CreateSchedule>,
) -> Result<(StatusCode, Json<Schedule>), ApiError> {
    let objective = request.objective.trim();
    if objective.is_empty() {
        return Err(ApiError::bad_request("the job (objective) is empty"));
    }
    let cron = request.cron.trim();
    let next = first_slot(cron, now_ms())
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_cron", e.to_string()))?;
    let row = state
        .store
        .create_schedule(&name, cron, objective, request.skip_missed, Some(next))
        .await?;
    state.runtime.schedules.poke();
    Ok((StatusCode::CREATED, Json(row.into())))
}

#[derive(Debug, serde::Deserialize)]
pub struct ListQuery {
    agent: Option<String>,
}

/// `GET /api/schedules[?agent=NAME]`: oldest first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ScheduleList>, ApiError> {
    let rows = state.store.schedules(query.agent.as_deref()).await?;
    Ok(Json(ScheduleList {
        schedules: rows.into_iter().map(Schedule::from).collect(),
    }))
}

/// `DELETE /api/schedules/{id}`: 204.
pub async fn delete(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.store.delete_schedule(&id).await?;
    state.runtime.schedules.poke();
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/schedules/{id}/pause`: it fires no more until resumed.
pub async fn pause(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Schedule>, ApiError> {
    let row = state.store.set_schedule_paused(&id, true, None).await?;
    state.runtime.schedules.poke();
    Ok(Json(row.into()))
}

/// `POST /api/schedules/{id}/resume`: from the first slot after now (the slots that went by
/// while paused are not run).
pub async fn resume(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Schedule>, ApiError> {
    let row = state.store.schedule(&id).await?;
    let next = first_slot(&row.cron, now_ms())
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, "invalid_cron", e.to_string()))?;
    let row = state
        .store
        .set_schedule_paused(&id, false, Some(next))
        .await?;
    state.runtime.schedules.poke();
    Ok(Json(row.into()))
}
