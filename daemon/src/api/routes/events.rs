//! The event streams: `GET /api/events` and `GET /api/agents/{name}/events` (SSE).
//!
//! Each SSE message is `id: <seq>` and `data: <event JSON>`. A stream replays from the store
//! after `Last-Event-ID` (or `?after=N`), then follows the bus; it ends when the daemon
//! shuts down, so open streams never hold up a graceful shutdown.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use std::sync::Arc;

use axum::body::Body;
use axum::http::HeaderName;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::stream;
use serde::Deserialize;

use crate::api::AppState;
use crate::api::error::{ApiError, ApiPath, ApiQuery};
use crate::bus::{Subscription, idle_interval};
use crate::store::{EventFilter, LiveEvent};

const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    /// Replay events after this seq; `0` replays everything.
    pub after: Option<i64>,
}

pub async fn all(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let after = resume_point(&headers, query)?;
    stream_from(state, after, EventFilter::default(), None).await
}

pub async fn agent(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let after = resume_point(&headers, query)?;
    let agent = state.store.agent(&name).await?;
    let filter = EventFilter {
        agent_id: Some(agent.id),
        ..EventFilter::default()
    };
    stream_from(state, after, filter, None).await
}

#[derive(Debug, Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    after: i64,
    agent: Option<String>,
    limit: Option<u32>,
}

/// The most events one page holds, whatever `limit` asks.
pub const MAX_PAGE: u32 = 1000;
/// A page stops early once its body passes this many bytes (big tool results), so no
/// request makes the daemon build an unbounded answer; the reader goes on from the last seq.
pub const MAX_PAGE_BYTES: usize = 8 << 20;

/// `GET /api/events/page`: a JSON page of the log, for readers that do not want a stream.
pub async fn page(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let filter = match &query.agent {
        Some(name) => EventFilter {
            agent_id: Some(state.store.agent(name).await?.id),
            ..EventFilter::default()
        },
        None => EventFilter::default(),
    };
    let limit = query.limit.unwrap_or(1000).clamp(1, MAX_PAGE);
    let events = state
        .store
        .events_after(query.after, &filter, limit)
        .await?;
    // The events are already JSON; splice them rather than parse and re-serialize.
    let mut body = String::from(r#"{"events":["#);
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            if body.len() + event.json().len() > MAX_PAGE_BYTES {
                break;
            }
            body.push(',');
        }
        body.push_str(event.json());
    }
    body.push_str("]}");
    Ok(([(header::CONTENT_TYPE, "application/json")], body))
}

/// Where to resume: `Last-Event-ID` wins over `?after=`; neither means "from now on".
pub(super) fn resume_point(
    headers: &HeaderMap,
    query: StreamQuery,
) -> Result<Option<i64>, ApiError> {
    Ok(match headers.get("last-event-id") {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be an event seq"))?,
        ),
        None => query.after,
    })
}

/// `hold` lives as long as the stream (a terminal following a task, for the notifier).
pub(super) async fn stream_from(
    state: AppState,
    after: Option<i64>,
    filter: EventFilter,
    hold: Option<crate::notify::Following>,
) -> Result<Response, ApiError> {
    let subscription =
        Subscription::new(state.store.clone(), filter, after, state.shutdown.clone()).await?;
    let keep_alive = idle_interval(KEEP_ALIVE);
    let frames = stream::unfold((subscription, keep_alive, hold), |mut state| async move {
        let (subscription, keep_alive, _hold) = &mut state;
        // next_batch is cancel-safe: a keep-alive tick loses nothing.
        let chunk = tokio::select! {
            _ = keep_alive.tick() => Bytes::from_static(b":\n\n"),
            next = subscription.next_batch() => match next {
                Ok(Some(batch)) => join_frames(&batch),
                Ok(None) => return None,
                Err(error) => {
                    // The client reconnects with Last-Event-ID and resumes where this one
                    // stopped.
                    tracing::warn!(%error, "event stream ended by a store error");
                    return None;
                }
            },
        };
        Some((Ok::<_, Infallible>(chunk), state))
    });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            // Tells reverse proxies not to buffer the stream.
            (HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(frames),
    )
        .into_response())
}

/// One buffer per batch: a single event's frame is shared as is; a burst goes out in one
/// write.
fn join_frames(batch: &[Arc<LiveEvent>]) -> Bytes {
    match batch {
        [one] => one.frame().clone(),
        many => {
            let len = many.iter().map(|e| e.frame().len()).sum();
            let mut joined = BytesMut::with_capacity(len);
            for event in many {
                joined.extend_from_slice(event.frame());
            }
            joined.freeze()
        }
    }
}
