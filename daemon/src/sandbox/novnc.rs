//! `/novnc/`: the box's noVNC page and its websocket, served by the daemon on its own origin,
//! so a person (on a phone too) takes over through the daemon's one port, behind the same
//! guard as the API (a non-loopback listener demands the token for both).
//!
//! Plain HTTP is forwarded to the container's websockify (which serves the noVNC files);
//! `/novnc/websockify` is bridged frame by frame to the container's websockify, which speaks
//! to x11vnc. The daemon's `/novnc/` sends the browser to `vnc.html` with `path=` pointing
//! the page's websocket back at the daemon.

use axum::body::Body;
use axum::extract::ws::{self, WebSocket};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message as Up;

use super::Sandbox;

/// Where `/novnc/` sends the browser: noVNC's page, connecting back through the daemon.
pub const PAGE: &str =
    "/novnc/vnc.html?autoconnect=1&resize=scale&reconnect=1&path=novnc/websockify";

fn unavailable(message: String) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, message).into_response()
}

/// Forwards `GET /novnc/<path>?<query>` to the box's noVNC files.
pub async fn http(sandbox: &Sandbox, path: &str, query: Option<&str>) -> Response {
    if path.is_empty() {
        let mut response = StatusCode::FOUND.into_response();
        response
            .headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static(PAGE));
        return response;
    }
    let live = match sandbox.running().await {
        Ok(live) => live,
        Err(error) => return unavailable(error.to_string()),
    };
    let mut url = format!("http://127.0.0.1:{}/{path}", live.novnc);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    let upstream = match sandbox.http().get(url).send().await {
        Ok(upstream) => upstream,
        Err(error) => return unavailable(format!("the box's noVNC does not answer: {error}")),
    };
    let status =
        StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let kind = upstream
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .cloned();
    let body = match upstream.bytes().await {
        Ok(body) => body,
        Err(error) => return unavailable(format!("reading from the box's noVNC: {error}")),
    };
    let mut response = (status, Body::from(body)).into_response();
    if let Some(kind) = kind.and_then(|k| HeaderValue::from_bytes(k.as_bytes()).ok()) {
        response.headers_mut().insert(header::CONTENT_TYPE, kind);
    }
    response
}

/// Bridges the person's websocket to the box's websockify (port `port`) until either side
/// closes.
pub async fn bridge(socket: WebSocket, port: u16) {
    let url = format!("ws://127.0.0.1:{port}/websockify");
    let upstream = match tokio_tungstenite::connect_async(url).await {
        Ok((upstream, _)) => upstream,
        Err(error) => {
            tracing::warn!(%error, "cannot reach the box's websockify");
            return;
        }
    };
    let (mut up_tx, mut up_rx) = upstream.split();
    let (mut down_tx, mut down_rx) = socket.split();
    let to_box = async {
        while let Some(Ok(message)) = down_rx.next().await {
            let message = match message {
                ws::Message::Binary(bytes) => Up::Binary(bytes),
                ws::Message::Text(text) => Up::text(text.as_str()),
                ws::Message::Ping(bytes) => Up::Ping(bytes),
                ws::Message::Pong(bytes) => Up::Pong(bytes),
                ws::Message::Close(_) => break,
            };
            if up_tx.send(message).await.is_err() {
                break;
            }
        }
        let _ = up_tx.close().await;
    };
    let to_person = async {
        while let Some(Ok(message)) = up_rx.next().await {
            let message = match message {
                Up::Binary(bytes) => ws::Message::Binary(bytes),
                Up::Text(text) => ws::Message::Text(text.as_str().into()),
                Up::Ping(bytes) => ws::Message::Ping(bytes),
                Up::Pong(bytes) => ws::Message::Pong(bytes),
                Up::Close(_) => break,
                Up::Frame(_) => continue,
            };
            if down_tx.send(message).await.is_err() {
                break;
            }
        }
        let _ = down_tx.close().await;
    };
    tokio::select! {
        () = to_box => {}
        () = to_person => {}
    }
}
