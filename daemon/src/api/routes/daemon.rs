//! The daemon's own routes (local socket only): `POST /api/daemon/stop`, a graceful shutdown;
//! `POST /api/daemon/token`, the token for non-loopback listeners (rotated on request).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{DaemonToken, TokenRequest};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson};
use crate::api::token::TokenError;

pub async fn stop(State(state): State<AppState>) -> StatusCode {
    tracing::info!("stop requested over the local socket");
    state.shutdown.cancel();
    StatusCode::ACCEPTED
}

pub async fn token(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<TokenRequest>,
) -> Result<Json<DaemonToken>, ApiError> {
    let tokens = state.tokens.clone();
    let result = tokio::task::spawn_blocking(move || tokens.get(request.rotate))
        .await
        .map_err(|error| {
            tracing::error!(%error, "the token task failed");
            internal()
        })?;
    match result {
        Ok(token) => Ok(Json(DaemonToken { token })),
        Err(error @ TokenError::FromEnv) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "token_from_env",
            error.to_string(),
        )),
        Err(error @ TokenError::Io(_)) => {
            tracing::error!(%error, "cannot give the token");
            Err(internal())
        }
    }
}

fn internal() -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error; see the daemon log",
    )
}
