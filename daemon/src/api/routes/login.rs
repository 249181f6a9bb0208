//! `POST /api/auth/login`: a one-time login code for a browser (`lazyboy web`, `daemon start`
//! print the link). The exchange itself, `GET /login`, is `api::auth::login`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::LoginCode;

use crate::api::AppState;
use crate::api::error::ApiError;

pub async fn mint(State(state): State<AppState>) -> Result<Json<LoginCode>, ApiError> {
    let (code, expires_at_ms) = state.auth.mint().map_err(|error| {
        tracing::error!(%error, "cannot make a login code");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the daemon log",
        )
    })?;
    Ok(Json(LoginCode {
        code,
        expires_at_ms,
    }))
}
