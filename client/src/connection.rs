//! HTTP/1.1 to the daemon over its local socket.
//!
//! Each request opens its own connection: a local connect costs microseconds, and it keeps
//! the client stateless (an event stream holds its connection for as long as it runs). Every
//! request carries the home's credential (`LAZYBOY_TOKEN`, else `<home>/token`, read when
//! first needed): the daemon serves nobody without it. A 401 re-reads it once, since a
//! rotation or a daemon's first start may have written a new one since.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use http_body_util::{BodyExt, Full};
pub use hyper::Method;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use interprocess::local_socket::tokio::Stream as SocketStream;
use interprocess::local_socket::traits::tokio::Stream as _;
use interprocess::local_socket::{GenericFilePath, ToFsName};
use lazyboy_protocol::{ErrorBody, Event, paths};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What can go wrong talking to the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon listens on the home's socket.
    #[error("lazyboyd is not running (home: {home})")]
    NotRunning { home: String },
    #[error("cannot reach lazyboyd at {socket}: {source}")]
    Io {
        socket: String,
        source: std::io::Error,
    },
    #[error("connection to lazyboyd failed: {0}")]
    Http(#[from] hyper::Error),
    /// The daemon answered with an error body.
    #[error("{message} ({status}, {code})")]
    Api {
        status: StatusCode,
        code: String,
        message: String,
    },
    #[error("unexpected answer from lazyboyd: {0}")]
    Decode(String),
}

/// A handle on one home's daemon.
#[derive(Debug, Clone)]
pub struct Client {
    home: PathBuf,
    /// The credential, once read (shared by clones).
    token: Arc<Mutex<Option<String>>>,
}

impl Client {
    pub fn new(home: PathBuf) -> Client {
        Client {
            home,
            token: Arc::default(),
        }
    }

    /// A client that sends `token` rather than reading it (a `LAZYBOY_TOKEN` given to the
    /// daemon only).
    pub fn with_token(home: PathBuf, token: &str) -> Client {
        Client {
            home,
            token: Arc::new(Mutex::new(Some(token.to_owned()))),
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The credential to send: `LAZYBOY_TOKEN`, else the home's token file (`None` when
    /// neither exists yet: no daemon ever ran on this home).
    pub fn token(&self) -> Option<String> {
        let mut cached = self.token.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.is_none() {
            *cached = std::env::var("LAZYBOY_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
                .or_else(|| {
                    let text = std::fs::read_to_string(self.home.join(paths::TOKEN)).ok()?;
                    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
                });
        }
        cached.clone()
    }

    fn forget_token(&self) {
        *self.token.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    async fn connect(
        &self,
    ) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, ClientError> {
        let socket = self.home.join(paths::SOCKET);
        let io_error = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning {
                    home: self.home.display().to_string(),
                }
            }
            _ => ClientError::Io {
                socket: socket.display().to_string(),
                source,
            },
        };
        let name = socket
            .as_path()
            .to_fs_name::<GenericFilePath>()
            .map_err(io_error)?;
        let stream = SocketStream::connect(name).await.map_err(io_error)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // Ends when the request's response is done or the daemon goes away.
            let _ = connection.await;
        });
        Ok(sender)
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        last_event_id: Option<i64>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        match self
            .send_once(method.clone(), path, body.clone(), last_event_id)
            .await
        {
            Err(ClientError::Api { status, .. }) if status == StatusCode::UNAUTHORIZED => {
                self.forget_token();
                self.send_once(method, path, body, last_event_id).await
            }
            other => other,
        }
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        last_event_id: Option<i64>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let mut headers = Vec::new();
        if body.is_some() {
            headers.push(("content-type", "application/json".to_owned()));
        }
        if let Some(id) = last_event_id {
            headers.push(("last-event-id", id.to_string()));
        }
        let response = self
            .send_raw(method, path, &headers, body.unwrap_or_default())
            .await?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        Err(match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => ClientError::Api {
                status,
                code: body.error.code,
                message: body.error.message,
            },
            Err(_) => ClientError::Decode(format!("{status}: {}", String::from_utf8_lossy(&bytes))),
        })
    }

    /// One request with the credential and `headers`; the answer as it came, whatever its
    /// status.
    async fn send_raw(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let mut sender = self.connect().await?;
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, "localhost");
        if let Some(token) = self.token() {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ClientError::Decode(e.to_string()))?;
        Ok(sender.send_request(request).await?)
    }

    /// A request whose answer the caller reads whatever its status (`lazyboy mcp serve`
    /// relays `/mcp`'s own answers and errors); a 401 re-reads the credential once, as for
    /// every request. `NotRunning` and `Io` mean nothing was sent.
    pub async fn exchange(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let response = self
            .send_raw(method.clone(), path, headers, body.clone())
            .await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        self.forget_token();
        self.send_raw(method, path, headers, body).await
    }

    /// A request with an optional JSON body; the answer's JSON body decoded as `T`.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, ClientError> {
        let body = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| ClientError::Decode(e.to_string()))?;
        let response = self.send(method, path, body, None).await?;
        let bytes = response.into_body().collect().await?.to_bytes();
        // 204 and friends: decode "no content" as JSON null.
        let bytes = if bytes.is_empty() {
            Bytes::from_static(b"null")
        } else {
            bytes
        };
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// A GET whose answer's body is returned as it is (an export in Markdown).
    pub async fn get_text(&self, path: &str) -> Result<String, ClientError> {
        let response = self.send(Method::GET, path, None, None).await?;
        let bytes = response.into_body().collect().await?.to_bytes();
        String::from_utf8(bytes.to_vec()).map_err(|e| ClientError::Decode(e.to_string()))
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.call(Method::GET, path, None::<&()>).await
    }

    /// An SSE stream of events, resuming after `after`. Ends when the daemon closes it.
    pub async fn events(
        &self,
        path: &str,
        after: i64,
    ) -> Result<impl Stream<Item = Result<Event, ClientError>> + use<>, ClientError> {
        let response = self.send(Method::GET, path, None, Some(after)).await?;
        let stream = response.into_body().into_data_stream().eventsource();
        Ok(stream.map(|item| {
            let message = item.map_err(|e| ClientError::Decode(e.to_string()))?;
            serde_json::from_str::<Event>(&message.data)
                .map_err(|e| ClientError::Decode(format!("bad event {:?}: {e}", message.data)))
        }))
    }
}
