//! `GET /api/tasks/{id}/files` (the task's deliverables) and `GET /api/tasks/{id}/files/{path}`
//! (one of them, downloaded as it is on disk now: opened beneath the workspace and streamed
//! from that open file, never re-opened by path).

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;
use lazyboy_protocol::FileList;

use crate::agent::FileError;
use crate::api::AppState;
use crate::api::error::{ApiError, ApiPath};

pub async fn list(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<FileList>, ApiError> {
    let files = state.runtime.deliverables(&id).await?;
    Ok(Json(FileList { files }))
}

pub async fn download(
    State(state): State<AppState>,
    ApiPath((id, path)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    let (file, name) = match state.runtime.deliverable(&id, &path).await {
        Ok(open) => open,
        Err(FileError::Store(error)) => return Err(error.into()),
        Err(error) => return Err(ApiError::not_found(error.to_string())),
    };
    let file = tokio::fs::File::from_std(file);
    let name = name.replace(['"', '\\', '\r', '\n'], "_");
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        )
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .body(Body::from_stream(tokio_util::io::ReaderStream::new(file)))
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))
}
