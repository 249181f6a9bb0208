//! The daemon's own routes (local socket only): `POST /api/daemon/stop`, a graceful shutdown
//! (with `checkpoint_ms`, a restart's: running tool calls finish first, see
//! `Runtime::checkpoint`); `POST /api/daemon/token`, the token for non-loopback listeners
//! (rotated on request).

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{DaemonToken, StopRequest, Stopping, TokenRequest};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson};
use crate::api::token::TokenError;

/// The longest a restart waits for checkpoints (an MCP call may run for 5 minutes).
const MAX_CHECKPOINT: Duration = Duration::from_secs(600);

/// An empty body is a plain stop (what every CLI before `daemon restart` sent).
pub async fn stop(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<(StatusCode, Json<Stopping>), ApiError> {
    let request: StopRequest = if body.iter().all(u8::is_ascii_whitespace) {
        StopRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    let tasks = state.runtime.running_count().await;
    let checkpoint = request
        .checkpoint_ms
        .map(|ms| Duration::from_millis(ms).min(MAX_CHECKPOINT));
    match checkpoint {
        None => {
            tracing::info!("stop requested over the local socket");
            state.shutdown.cancel();
        }
        Some(within) => {
            tracing::info!(
                tasks,
                ?within,
                "restart requested: stopping at the tasks' checkpoints"
            );
            state.runtime.stop_after_checkpoint(within);
        }
    }
    let checkpoint_ms = checkpoint.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Ok((
        StatusCode::ACCEPTED,
        Json(Stopping {
            tasks,
            checkpoint_ms,
        }),
    ))
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
