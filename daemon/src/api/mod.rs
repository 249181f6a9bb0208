//! The HTTP API: one axum `Router`, served on the local socket (for the CLI) and on TCP (for
//! browsers). Every request on either carries the home's credential ([`auth`]); the TCP copy
//! is also wrapped in [`guard`] (Host, Origin, framing); the socket copy also gets the
//! daemon's own routes (`POST /api/daemon/stop`, `POST /api/daemon/token`), and is served
//! with the peer's user id ([`peers::Peer`]) as connect info. Each listener mounts its own
//! MCP server at `/mcp` ([`crate::mcp_server`]) inside the same layers, so it is
//! authenticated (and on TCP guarded) exactly like the API.

pub mod assets;
pub mod auth;
pub mod error;
pub mod guard;
pub mod lan;
pub mod listeners;
pub mod peers;
mod routes;
pub mod tls;
pub mod token;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use lazyboy_protocol::{Health, MAX_BODY_BYTES};
use tokio_util::sync::CancellationToken;

use crate::mcp_server;
use crate::store::Store;
use error::ApiError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// Cancelled when the daemon shuts down; every open stream ends on it.
    pub shutdown: CancellationToken,
    pub health: Arc<Health>,
    pub runtime: Arc<crate::agent::Runtime>,
    /// The API token's owner (rotated over the local socket).
    pub tokens: Arc<token::Tokens>,
    /// The credential checks and login codes of both listeners.
    pub auth: Arc<auth::Auth>,
    /// Web Push subscriptions, channel status and tests.
    pub notify: Arc<crate::notify::Notifier>,
    /// Backups, retention and exports.
    pub keep: Arc<crate::keep::Keep>,
}

/// The routes shared by both listeners.
fn api(state: AppState) -> Router {
    Router::new()
        .route("/", get(routes::web::index))
        .route("/sw.js", get(routes::web::service_worker))
        .route("/manifest.webmanifest", get(routes::web::manifest))
        .route("/assets/{*path}", get(routes::web::asset))
        .route("/api/state", get(routes::dashboard::state))
        .route(
            "/api/agents/{name}/conversation",
            get(routes::dashboard::conversation),
        )
        .route("/api/health", get(routes::health::get))
        .route("/api/auth/login", post(routes::login::mint))
        .route(
            "/api/agents",
            get(routes::agents::list).post(routes::agents::create),
        )
        .route(
            "/api/agents/{name}",
            get(routes::agents::show)
                .patch(routes::agents::update)
                .delete(routes::agents::delete),
        )
        .route("/api/agents/{name}/messages", post(routes::messages::post))
        .route("/api/agents/{name}/events", get(routes::events::agent))
        .route("/api/agents/{name}/tasks", post(routes::tasks::create))
        .route("/api/tasks", get(routes::tasks::list))
        .route("/api/tasks/{id}", get(routes::tasks::show))
        .route("/api/tasks/{id}/stop", post(routes::tasks::stop))
        .route("/api/tasks/{id}/answer", post(routes::tasks::answer))
        .route("/api/tasks/{id}/approve", post(routes::tasks::approve))
        .route("/api/tasks/{id}/deny", post(routes::tasks::deny))
        .route(
            "/api/tasks/{id}/continue",
            post(routes::tasks::continue_task),
        )
        .route("/api/tasks/{id}/events", get(routes::tasks::events))
        .route("/api/tasks/{id}/export", get(routes::keep::export))
        .route("/api/backup", post(routes::keep::backup))
        .route("/api/retention/run", post(routes::keep::retention))
        .route("/api/tasks/{id}/files", get(routes::files::list))
        .route(
            "/api/tasks/{id}/files/{*path}",
            get(routes::files::download),
        )
        .route("/api/agents/{name}/clear", post(routes::agents::clear))
        .route(
            "/api/agents/{name}/schedules",
            post(routes::schedules::create),
        )
        .route("/api/schedules", get(routes::schedules::list))
        .route(
            "/api/schedules/{id}",
            axum::routing::delete(routes::schedules::delete),
        )
        .route("/api/schedules/{id}/pause", post(routes::schedules::pause))
        .route(
            "/api/schedules/{id}/resume",
            post(routes::schedules::resume),
        )
        .route("/api/nodes", get(routes::nodes::list))
        .route("/api/notify", get(routes::notify::status))
        .route("/api/notify/vapid", get(routes::notify::vapid))
        .route(
            "/api/notify/subscriptions",
            get(routes::notify::list).post(routes::notify::subscribe),
        )
        .route(
            "/api/notify/subscriptions/{id}",
            axum::routing::delete(routes::notify::unsubscribe),
        )
        .route("/api/notify/test", post(routes::notify::test))
        .route("/api/mcp", get(routes::mcp::list))
        .route("/api/mcp/{name}/test", post(routes::mcp::test))
        .route("/api/doctor", get(routes::doctor::get))
        .route("/api/box", get(routes::sandbox::status))
        .route("/api/box/start", post(routes::sandbox::start))
        .route("/api/box/stop", post(routes::sandbox::stop))
        .route("/api/box/screenshot", get(routes::sandbox::screenshot))
        .route("/api/box/takeover", post(routes::sandbox::takeover))
        .route("/api/box/handback", post(routes::sandbox::handback))
        .route("/novnc", get(routes::sandbox::novnc_root))
        .route("/novnc/", get(routes::sandbox::novnc_root))
        .route("/novnc/websockify", get(routes::sandbox::websockify))
        .route("/novnc/{*path}", get(routes::sandbox::novnc))
        .route("/api/events", get(routes::events::all))
        .route("/api/events/page", get(routes::events::page))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// The router for the local socket.
pub fn socket_router(state: AppState) -> Router {
    let auth = state.auth.clone();
    let mcp = mcp_server::service(
        state.runtime.clone(),
        mcp_server::Listener::Socket,
        state.shutdown.clone(),
    );
    let local = Router::new()
        .route("/api/daemon/stop", post(routes::daemon::stop))
        .route("/api/daemon/token", post(routes::daemon::token))
        .route_service("/mcp", mcp)
        .with_state(state.clone());
    oversize_refused(
        local
            .merge(api(state))
            .layer(axum::middleware::from_fn_with_state(auth, auth::socket)),
    )
}

/// The router for the TCP listener: the guard first (Host, Origin), then the credential.
pub fn tcp_router(state: AppState, guard: guard::Guard) -> Router {
    let auth = state.auth.clone();
    let mcp = mcp_server::service(
        state.runtime.clone(),
        mcp_server::Listener::Tcp,
        state.shutdown.clone(),
    );
    let login = Router::new()
        .route("/login", get(auth::login))
        .route_service("/mcp", mcp)
        .with_state(auth.clone());
    oversize_refused(
        api(state)
            .merge(login)
            .layer(axum::middleware::from_fn_with_state(auth, auth::tcp))
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(guard),
                guard::check,
            )),
    )
}

/// Both listeners' outermost layers: a declared oversize body refused unread, and every
/// 413 closing its connection.
fn oversize_refused(router: Router) -> Router {
    router
        .layer(axum::middleware::from_fn(refuse_declared_oversize))
        .layer(axum::middleware::map_response(close_after_refused_body))
}

/// A request whose `Content-Length` is over what any route takes (`/mcp`'s limit) is
/// refused at once, before a byte of its body is read: the client, waiting for the answer
/// or still writing, gets the 413 rather than a connection reset after 16 MiB were read.
async fn refuse_declared_oversize(request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(length) if length > mcp_server::MAX_REQUEST_BYTES as u64 => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!(
                "the body is {length} bytes; the most any route takes is {}",
                mcp_server::MAX_REQUEST_BYTES
            ),
        )
        .into_response(),
        _ => next.run(request).await,
    }
}

/// A body refused as too large (the API's limit, `/mcp`'s) is left unread on the
/// connection, so hyper closes the connection after the answer. Saying so keeps a client's
/// pool from reusing it: otherwise the client's next request races the close and fails
/// mid-flight (`IncompleteMessage`), as the suites saw under load.
async fn close_after_refused_body(mut response: Response) -> Response {
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}
