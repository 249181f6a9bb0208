//! `GET /api/doctor`: the checks only the daemon can make (the config as it is on disk now,
//! the model, each MCP server, web search, the notification channels). The CLI adds the machine's (Docker, the box
//! image, the service).

use axum::Json;
use axum::extract::State;
use lazyboy_protocol::DoctorReport;

use crate::api::AppState;

pub async fn get(State(state): State<AppState>) -> Json<DoctorReport> {
    let mut checks = crate::agent::doctor::checks(&state.runtime, &state.health.home).await;
    checks.extend(state.notify.doctor().await);
    Json(DoctorReport { checks })
}
