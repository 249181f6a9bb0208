//! The dashboard's files (`web/`, compiled in by `api::assets`): `/`, `/sw.js`,
//! `/manifest.webmanifest` and `/assets/<path>`.

use axum::extract::Path;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;

use crate::api::assets;
use crate::api::error::ApiError;

pub async fn index(headers: HeaderMap) -> Result<Response, ApiError> {
    entry("index.html", &headers)
}

pub async fn service_worker(headers: HeaderMap) -> Result<Response, ApiError> {
    entry("sw.js", &headers)
}

pub async fn manifest(headers: HeaderMap) -> Result<Response, ApiError> {
    entry("manifest.webmanifest", &headers)
}

/// `/assets/<path>[?v=<hash>]`.
pub async fn asset(
    Path(path): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let version = uri
        .query()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("v=")));
    if assets::is_entry_point(&path) {
        return Err(missing(&path));
    }
    assets::respond(&path, version, &headers).ok_or_else(|| missing(&path))
}

fn entry(path: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    assets::respond(path, None, headers).ok_or_else(|| missing(path))
}

fn missing(path: &str) -> ApiError {
    ApiError::not_found(format!("no dashboard file {path:?}"))
}
