//! The dashboard's files, compiled into the daemon (`web/`, no build step) and served from one
//! table.
//!
//! - Every file but the three entry points is served at `/assets/<path>` and referenced by a
//!   URL carrying its content hash (`?v=<hash>`): such a response may be cached for a year.
//!   The page's ES modules import each other by plain relative paths; the import map that
//!   `index.html` gets at serve time sends each of them to its hashed URL.
//! - `/`, `/sw.js` and `/manifest.webmanifest` keep fixed URLs (a service worker and an
//!   installed app are identified by them), are revalidated on every load (`no-cache` with a
//!   hash `ETag`), and have the hashed URLs written into them where they name other files.
//! - Text files are gzipped once, the first time any file is asked for, and sent compressed
//!   to clients that accept gzip.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One file of `web/`.
struct Source {
    path: &'static str,
    mime: &'static str,
    bytes: &'static [u8],
}

macro_rules! web {
    ($path:literal, $mime:expr) => {
        Source {
            path: $path,
            mime: $mime,
            bytes: include_bytes!(concat!("../../../web/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the dashboard serves. A unit test checks that `web/` holds no other file
/// (besides its README and the icon script).
static SOURCES: &[Source] = &[
    web!("index.html", "text/html; charset=utf-8"),
    web!("sw.js", JS),
    web!("manifest.webmanifest", "application/manifest+json"),
    web!("style.css", "text/css; charset=utf-8"),
    web!("app.js", JS),
    web!("lib/api.js", JS),
    web!("lib/dom.js", JS),
    web!("lib/fold.js", JS),
    web!("lib/live.js", JS),
    web!("lib/markdown.js", JS),
    web!("lib/notify.js", JS),
    web!("lib/push.js", JS),
    web!("lib/store.js", JS),
    web!("lib/visible.js", JS),
    web!("components/lb-agent-form.js", JS),
    web!("components/lb-agent-list.js", JS),
    web!("components/lb-agent-view.js", JS),
    web!("components/lb-composer.js", JS),
    web!("components/lb-computer.js", JS),
    web!("components/lb-connection.js", JS),
    web!("components/lb-conversation.js", JS),
    web!("components/lb-message.js", JS),
    web!("components/lb-plan.js", JS),
    web!("components/lb-question.js", JS),
    web!("components/lb-schedules.js", JS),
    web!("components/lb-task-list.js", JS),
    web!("components/lb-verdict.js", JS),
    web!("components/lb-work.js", JS),
    web!("icons/icon-192.png", "image/png"),
    web!("icons/icon-512.png", "image/png"),
    web!("icons/icon-maskable-512.png", "image/png"),
];

/// The files served at fixed URLs, with the hashed URLs of the others written in.
const ENTRY_POINTS: [(&str, &str); 3] = [
    ("index.html", "/"),
    ("sw.js", "/sw.js"),
    ("manifest.webmanifest", "/manifest.webmanifest"),
];

/// A file ready to send.
struct Prepared {
    path: &'static str,
    mime: &'static str,
    body: Vec<u8>,
    gzip: Option<Vec<u8>>,
    hash: String,
}

fn prepared() -> &'static [Prepared] {
    static PREPARED: OnceLock<Vec<Prepared>> = OnceLock::new();
    PREPARED.get_or_init(prepare)
}

fn prepare() -> Vec<Prepared> {
    let hashed = |s: &Source| format!("/assets/{}?v={}", s.path, hash(s.bytes));
    let assets: Vec<&Source> = SOURCES
        .iter()
        .filter(|s| !ENTRY_POINTS.iter().any(|(p, _)| *p == s.path))
        .collect();
    // `{{path}}` in an entry point becomes that file's hashed URL.
    let fill = |text: &str| {
        let mut text = text.to_owned();
        for source in &assets {
            text = text.replace(&format!("{{{{{}}}}}", source.path), &hashed(source));
        }
        text
    };
    let mut import_map = String::from(r#"<script type="importmap">{"imports":{"#);
    let modules = assets.iter().filter(|s| s.path.ends_with(".js"));
    for (i, source) in modules.enumerate() {
        let comma = if i == 0 { "" } else { "," };
        let _ = write!(
            import_map,
            r#"{comma}"/assets/{}":"{}""#,
            source.path,
            hashed(source)
        );
    }
    import_map.push_str("}}</script>");
    let shell: Vec<String> = std::iter::once("/".to_owned())
        .chain(assets.iter().map(|s| hashed(s)))
        .collect();
    let shell = serde_json::to_string(&shell).unwrap_or_else(|_| "[]".into());

    SOURCES
        .iter()
        .map(|source| {
            let body = match source.path {
                "index.html" => fill(&String::from_utf8_lossy(source.bytes))
                    .replace("<!--importmap-->", &import_map)
                    .into_bytes(),
                // The worker's bytes change with any file's hash, so browsers install the
                // new shell whenever the daemon serves a new one.
                "sw.js" => String::from_utf8_lossy(source.bytes)
                    .replace("\"{{shell}}\"", &shell)
                    .into_bytes(),
                "manifest.webmanifest" => fill(&String::from_utf8_lossy(source.bytes)).into_bytes(),
                _ => source.bytes.to_vec(),
            };
            let gzip = (!source.mime.starts_with("image/"))
                .then(|| gzip(&body))
                .flatten();
            Prepared {
                path: source.path,
                mime: source.mime,
                hash: hash(&body),
                body,
                gzip,
            }
        })
        .collect()
}

/// FNV-1a, 64 bits, as 16 hex digits: a content hash for cache keys (not for security).
fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

/// The response for the file at `path` of `web/` (an entry point or an asset); `None` when
/// there is none. `versioned`: the URL carried the file's current hash.
pub fn respond(path: &str, versioned: Option<&str>, headers: &HeaderMap) -> Option<Response> {
    let file = prepared().iter().find(|p| p.path == path)?;
    let etag = format!("\"{}\"", file.hash);
    // An asset is served as it is, so its hash is that of its source, which its URL names.
    let immutable = versioned == Some(file.hash.as_str());
    let cache = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let accepts_gzip = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
        match (&file.gzip, accepts_gzip) {
            (Some(gz), true) if gz.len() < file.body.len() => {
                let mut response = gz.clone().into_response();
                response
                    .headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                response
            }
            _ => file.body.clone().into_response(),
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(file.mime));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    headers.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    Some(response)
}

/// Whether `path` is one of the entry points rather than an `/assets/` file.
pub fn is_entry_point(path: &str) -> bool {
    ENTRY_POINTS.iter().any(|(p, _)| *p == path)
}

#[cfg(test)]
mod tests;
