//! A plain SSE client for tests, over real HTTP (reqwest + eventsource-stream).

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use lazyboy_protocol::Event;

/// One received SSE message: its `id`, its `event` field, and the decoded event.
#[derive(Debug, Clone)]
pub struct Message {
    pub id: String,
    pub event_field: String,
    pub event: Event,
}

/// Opens `url` (an SSE endpoint), sending `Last-Event-ID` when given.
pub async fn connect(
    http: &reqwest::Client,
    url: &str,
    last_event_id: Option<i64>,
) -> impl Stream<Item = Message> + use<> {
    let mut request = http.get(url);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id.to_string());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    response.bytes_stream().eventsource().map(|item| {
        let message = item.unwrap();
        Message {
            id: message.id,
            event_field: message.event,
            event: serde_json::from_str(&message.data).unwrap(),
        }
    })
}

/// A minimal SSE reader that only parses `id:` lines: for benchmarks, so that the client's
/// JSON decoding does not count as the daemon's latency. Yields each message's id as it
/// arrives.
pub async fn connect_ids(http: &reqwest::Client, url: &str) -> impl Stream<Item = i64> + use<> {
    let response = http.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut pending = Vec::<u8>::new();
    response
        .bytes_stream()
        .map(move |chunk| {
            pending.extend_from_slice(&chunk.unwrap());
            let mut ids = Vec::new();
            let mut start = 0;
            while let Some(len) = pending[start..].iter().position(|b| *b == b'\n') {
                let line = &pending[start..start + len];
                if let Some(id) = line.strip_prefix(b"id: ") {
                    ids.push(std::str::from_utf8(id).unwrap().parse().unwrap());
                }
                start += len + 1;
            }
            pending.drain(..start);
            futures_util::stream::iter(ids)
        })
        .flatten()
}
