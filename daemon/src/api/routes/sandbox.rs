//! `/api/box` (the box's state, start, stop, a screenshot, a person's takeover and
//! hand-back) and `/novnc/` (the box's desktop in the browser, through the daemon). Thin:
//! each calls one `Sandbox` operation.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lazyboy_protocol::{BoxStatus, BoxTakeover};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiPath};
use crate::sandbox::novnc;

pub async fn status(State(state): State<AppState>) -> Json<BoxStatus> {
    Json(state.runtime.sandbox.status().await)
}

pub async fn start(State(state): State<AppState>) -> Result<Json<BoxStatus>, ApiError> {
    // Asked for by a person: look at the engine itself, not at what was seen a moment ago
    // (the container may have been removed behind the daemon's back).
    state.runtime.sandbox.forget().await;
    state.runtime.sandbox.ensure(None).await?;
    Ok(Json(state.runtime.sandbox.status().await))
}

pub async fn stop(State(state): State<AppState>) -> Result<Json<BoxStatus>, ApiError> {
    state.runtime.sandbox.stop().await?;
    Ok(Json(state.runtime.sandbox.status().await))
}

pub async fn screenshot(State(state): State<AppState>) -> Result<Response, ApiError> {
    let sandbox = &state.runtime.sandbox;
    let live = sandbox.running().await?;
    let png = sandbox.screenshot(&live).await?;
    Ok(([(header::CONTENT_TYPE, "image/png")], png).into_response())
}

/// A person takes the screen and browser (`{"task": ...}` to take over for that task; an
/// empty body or `{}` for the task holding it).
pub async fn takeover(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<BoxStatus>, ApiError> {
    let request: BoxTakeover = if body.iter().all(u8::is_ascii_whitespace) {
        BoxTakeover::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    let task = match request.task {
        Some(id) => Some(state.store.task(&id).await?),
        None => None,
    };
    state.runtime.sandbox.takeover(task, false).await?;
    Ok(Json(state.runtime.sandbox.status().await))
}

pub async fn handback(State(state): State<AppState>) -> Result<Json<BoxStatus>, ApiError> {
    if !state.runtime.sandbox.handback().await {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_taken_over",
            "no person holds the box",
        ));
    }
    Ok(Json(state.runtime.sandbox.status().await))
}

pub async fn novnc_root(State(state): State<AppState>) -> Response {
    novnc::http(&state.runtime.sandbox, "").await
}

/// noVNC's files (static: a query string changes nothing).
pub async fn novnc(State(state): State<AppState>, ApiPath(path): ApiPath<String>) -> Response {
    novnc::http(&state.runtime.sandbox, &path).await
}

/// The desktop's websocket, bridged to a VNC server in the box for this viewer. A page of
/// another origin may not open it (a websocket is a GET, so the guard's CSRF check does not
/// cover it).
pub async fn websockify(
    State(state): State<AppState>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN)
        && !crate::api::guard::origin_allowed(origin, host)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            "the box's desktop opens only from the daemon's own pages",
        ));
    }
    let live = state.runtime.sandbox.running().await?;
    Ok(upgrade
        .protocols(["binary"])
        .on_upgrade(move |socket| novnc::bridge(socket, live)))
}
