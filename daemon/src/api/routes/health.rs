//! `GET /api/health`: liveness, version and protocol, for the CLI's handshake.

use axum::Json;
use axum::extract::State;
use lazyboy_protocol::Health;

use crate::api::AppState;

pub async fn get(State(state): State<AppState>) -> Json<Health> {
    Json(Health::clone(&state.health))
}
