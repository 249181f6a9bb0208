//! `/novnc/`: the box's noVNC page and its websocket, served by the daemon on its own origin,
//! so a person (on a phone too) takes over through the daemon's one port, behind the API's
//! own authentication (the router's guard covers both).
//!
//! Nothing in the box serves either over the network. The page's files (noVNC, 1.2 MB in
//! the image's `/usr/share/novnc`) are read out of the container once per container, as one
//! tar through the engine's API, and served from memory; `/novnc/websockify` is bridged to a
//! fresh x11vnc for that viewer (`port.rs`: `box-port vnc`, RFB on its stdin/stdout). The
//! daemon's `/novnc/` sends the browser to `vnc.html` with `path=` pointing the page's
//! websocket back at the daemon.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ws::{self, WebSocket};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;

use super::port::{self, Service};
use super::{BoxError, Live, Sandbox, docker};

/// Where `/novnc/` sends the browser: noVNC's page, connecting back through the daemon.
pub const PAGE: &str =
    "/novnc/vnc.html?autoconnect=1&resize=scale&reconnect=1&path=novnc/websockify";

/// Where the image keeps noVNC's files.
const ROOT: &str = "/usr/share/novnc";
/// noVNC is 1.2 MB; anything far larger is not what we expect there.
const ARCHIVE_CAP: usize = 16 << 20;

fn unavailable(message: String) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, message).into_response()
}

/// noVNC's files, by path below its root (`vnc.html`, `app/ui.js`).
#[derive(Debug, Default)]
pub struct Files {
    by_path: HashMap<String, Bytes>,
}

impl Files {
    /// Reads the tar Docker gives for the root (entries `novnc/...`). Relative symlinks to
    /// files in the tree are served as their targets; anything else is left out.
    pub fn from_tar(archive: &[u8]) -> Result<Files, std::io::Error> {
        let mut by_path = HashMap::new();
        let mut links = Vec::new();
        for entry in tar::Archive::new(archive).entries()? {
            let mut entry = entry?;
            let path = entry.path()?.to_string_lossy().into_owned();
            // Below the archive's top directory (the root's own name).
            let Some((_, path)) = path.split_once('/') else {
                continue;
            };
            let path = path.trim_end_matches('/').to_owned();
            let kind = entry.header().entry_type();
            if kind.is_file() {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes)?;
                by_path.insert(path, Bytes::from(bytes));
            } else if kind.is_symlink()
                && let Some(target) = entry.link_name()?
            {
                links.push((path, target.to_string_lossy().into_owned()));
            }
        }
        for (path, target) in links {
            let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
            let target = if dir.is_empty() {
                target
            } else {
                format!("{dir}/{target}")
            };
            if let Some(bytes) = by_path.get(&target).cloned() {
                by_path.insert(path, bytes);
            }
        }
        Ok(Files { by_path })
    }

    pub fn get(&self, path: &str) -> Option<&Bytes> {
        self.by_path.get(path)
    }
}

/// The Content-Type noVNC's files need (module scripts must be JavaScript).
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "mp3" => "audio/mpeg",
        "oga" | "ogg" => "audio/ogg",
        "ttf" => "font/ttf",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

impl Sandbox {
    /// noVNC's files of the running box, read out of it on first use.
    async fn novnc_files(&self, live: &Live) -> Result<Arc<Files>, BoxError> {
        let mut slot = self.novnc.lock().await;
        if let Some((container, files)) = slot.as_ref()
            && *container == live.id
        {
            return Ok(files.clone());
        }
        let archive = docker::archive(&live.docker, &live.id, ROOT, ARCHIVE_CAP).await?;
        let files = Files::from_tar(&archive)
            .map_err(|e| BoxError::Tool(format!("noVNC's files in the box: {e}")))?;
        let files = Arc::new(files);
        *slot = Some((live.id.clone(), files.clone()));
        Ok(files)
    }
}

/// Serves `GET /novnc/<path>` from the box's noVNC files.
pub async fn http(sandbox: &Sandbox, path: &str) -> Response {
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
    let files = match sandbox.novnc_files(&live).await {
        Ok(files) => files,
        Err(error) => return unavailable(format!("the box's noVNC files: {error}")),
    };
    let Some(bytes) = files.get(path) else {
        return (StatusCode::NOT_FOUND, "no such file in noVNC").into_response();
    };
    let mut response = (StatusCode::OK, Body::from(bytes.clone())).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    response
}

/// Bridges the person's websocket to a fresh x11vnc in the box until either side closes:
/// binary messages in are RFB bytes to it, its bytes go out as binary messages.
pub async fn bridge(socket: WebSocket, live: Live) {
    let port = match port::open(&live.docker, &live.id, Service::Vnc).await {
        Ok(port) => port,
        Err(error) => {
            tracing::warn!(%error, "cannot reach the box's VNC");
            return;
        }
    };
    let (mut reader, mut writer) = (port.reader, port.writer);
    let (mut down_tx, mut down_rx) = socket.split();
    let to_box = async {
        while let Some(Ok(message)) = down_rx.next().await {
            let bytes = match message {
                ws::Message::Binary(bytes) => bytes,
                ws::Message::Text(text) => Bytes::copy_from_slice(text.as_str().as_bytes()),
                // axum answers pings itself.
                ws::Message::Ping(_) | ws::Message::Pong(_) => continue,
                ws::Message::Close(_) => break,
            };
            if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    };
    let to_person = async {
        while let Some(Ok(bytes)) = reader.next().await {
            if down_tx.send(ws::Message::Binary(bytes)).await.is_err() {
                break;
            }
        }
        let complaint = reader.complaint();
        if !complaint.is_empty() {
            tracing::warn!(%complaint, "the box's VNC ended");
        }
        let _ = down_tx.close().await;
    };
    tokio::select! {
        () = to_box => {}
        () = to_person => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar as Docker gives it for `/usr/share/novnc`: files below `novnc/`, a directory, a
    /// relative symlink.
    #[test]
    fn files_come_out_of_the_archive_by_path() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut dir = tar::Header::new_ustar();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_size(0);
        builder
            .append_data(&mut dir, "novnc/app/", std::io::empty())
            .unwrap();
        for (path, body) in [("novnc/vnc.html", "<html>noVNC"), ("novnc/app/ui.js", "ui")] {
            let mut header = tar::Header::new_ustar();
            header.set_size(body.len() as u64);
            header.set_mode(0o644);
            builder
                .append_data(&mut header, path, body.as_bytes())
                .unwrap();
        }
        let mut link = tar::Header::new_ustar();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "novnc/vnc_auto.html", "vnc.html")
            .unwrap();
        let files = Files::from_tar(&builder.into_inner().unwrap()).unwrap();
        assert_eq!(files.get("vnc.html").unwrap().as_ref(), b"<html>noVNC");
        assert_eq!(files.get("app/ui.js").unwrap().as_ref(), b"ui");
        assert_eq!(files.get("vnc_auto.html").unwrap().as_ref(), b"<html>noVNC");
        assert!(files.get("app").is_none() && files.get("../etc/passwd").is_none());
        assert_eq!(content_type("app/ui.js"), "text/javascript; charset=utf-8");
    }
}
