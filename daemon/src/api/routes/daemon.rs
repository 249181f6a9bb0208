//! `POST /api/daemon/stop` (local socket only): a graceful shutdown.

use axum::extract::State;
use axum::http::StatusCode;

use crate::api::AppState;

pub async fn stop(State(state): State<AppState>) -> StatusCode {
    tracing::info!("stop requested over the local socket");
    state.shutdown.cancel();
    StatusCode::ACCEPTED
}
