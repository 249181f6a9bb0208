//! `POST /api/backup`, `POST /api/retention/run` and `GET /api/tasks/{id}/export`
//! (`?format=md|json`, default json): thin over [`crate::keep`]. Behind the same
//! authentication as every route (an agent's confined command has no token: 401).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use lazyboy_protocol::{BackupMade, BackupRequest, RetentionReport, RetentionRequest};
use serde::Deserialize;

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::keep::{export, markdown};

pub async fn backup(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<BackupRequest>,
) -> Result<Json<BackupMade>, ApiError> {
    Ok(Json(state.keep.backup(&request).await?))
}

pub async fn retention(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<RetentionRequest>,
) -> Result<Json<RetentionReport>, ApiError> {
    Ok(Json(state.keep.retention(&request).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    #[serde(default)]
    format: Option<String>,
}

pub async fn export(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let markdown = match query.format.as_deref() {
        None | Some("json") => false,
        Some("md" | "markdown") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format {other:?}: use md or json"
            )));
        }
    };
    let record = export::export(&state.store, &id).await?;
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let (body, kind, ext) = if markdown {
        (
            markdown::render(&record),
            "text/markdown; charset=utf-8",
            "md",
        )
    } else {
        let json = serde_json::to_string_pretty(&record).map_err(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
        })?;
        (json, "application/json", "json")
    };
    Ok((
        [
            (header::CONTENT_TYPE, kind.to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"task-{safe}.{ext}\""),
            ),
        ],
        body,
    )
        .into_response())
}
