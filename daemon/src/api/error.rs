//! The one API error type, and extractors whose rejections become it.
//!
//! Every error leaves as `{"error":{"code":"...","message":"..."}}` with a fitting status.
//! Internal failures are logged in full and answered with a generic message.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use lazyboy_protocol::{ErrorBody, ErrorDetail};
use serde::de::DeserializeOwned;

use crate::agent::{AnswerError, MessageError};
use crate::store::StoreError;

/// An error answer: status, stable code, message for people.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// Maps an extractor's rejection, keeping the parser's message.
    fn rejected(status: StatusCode, text: String) -> ApiError {
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            s if s.is_server_error() => "internal",
            _ => "bad_request",
        };
        // A well-formed body of the wrong shape (axum says 422) is still the client's bad request.
        let status = if status == StatusCode::UNPROCESSABLE_ENTITY {
            StatusCode::BAD_REQUEST
        } else {
            status
        };
        ApiError::new(status, code, text)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<AnswerError> for ApiError {
    fn from(error: AnswerError) -> ApiError {
        match error {
            AnswerError::Store(error) => error.into(),
            error @ AnswerError::NotWaiting(_) => {
                ApiError::new(StatusCode::CONFLICT, "not_waiting", error.to_string())
            }
            error @ AnswerError::NotApproval => {
                ApiError::new(StatusCode::CONFLICT, "not_an_approval", error.to_string())
            }
            error => ApiError::bad_request(error.to_string()),
        }
    }
}

impl From<MessageError> for ApiError {
    fn from(error: MessageError) -> ApiError {
        match error {
            MessageError::Store(error) => error.into(),
            MessageError::Answer(error) => error.into(),
            error @ MessageError::Workspace(_) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                error.to_string(),
            ),
        }
    }
}

impl From<crate::agent::JobError> for ApiError {
    fn from(error: crate::agent::JobError) -> ApiError {
        use crate::agent::JobError;
        match error {
            JobError::Store(error) => error.into(),
            error @ JobError::Workspace(_) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                error.to_string(),
            ),
            error => ApiError::bad_request(error.to_string()),
        }
    }
}

impl From<crate::sandbox::BoxError> for ApiError {
    fn from(error: crate::sandbox::BoxError) -> ApiError {
        use crate::sandbox::BoxError;
        let (status, code) = match &error {
            BoxError::Unavailable(_) | BoxError::NoImage(_) | BoxError::OldImage(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "box_unavailable")
            }
            BoxError::Tool(_) => (StatusCode::CONFLICT, "box_not_running"),
            _ => (StatusCode::BAD_GATEWAY, "box_error"),
        };
        ApiError::new(status, code, error.to_string())
    }
}

impl From<crate::keep::KeepError> for ApiError {
    fn from(error: crate::keep::KeepError) -> ApiError {
        use crate::keep::KeepError;
        match error {
            KeepError::Store(error) => error.into(),
            KeepError::NoSuchTask(_) => ApiError::not_found(error.to_string()),
            KeepError::Invalid(_) => ApiError::bad_request(error.to_string()),
            KeepError::Postgres { .. } => {
                ApiError::new(StatusCode::CONFLICT, "use_pg_dump", error.to_string())
            }
            KeepError::Io { .. } => {
                // The path is the person's own (they named it, or it is in their home).
                tracing::error!(error = %error, "backup failure");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "io", error.to_string())
            }
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::AgentExists(_)
            | StoreError::Changed { .. }
            | StoreError::NotOwner(_)
            | StoreError::Unsupported(_)
            | StoreError::NodeInUse(_) => {
                ApiError::new(StatusCode::CONFLICT, "conflict", error.to_string())
            }
            StoreError::NoSuchAgent(_)
            | StoreError::NoSuchTask(_)
            | StoreError::NoSuchSchedule(_) => ApiError::not_found(error.to_string()),
            other => {
                tracing::error!(error = %other, "store failure");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error; see the daemon log",
                )
            }
        }
    }
}

/// `Json<T>` whose rejection is an [`ApiError`].
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(rejected_json(&rejection)),
        }
    }
}

/// `Query<T>` whose rejection is an [`ApiError`].
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|r: QueryRejection| ApiError::rejected(r.status(), r.body_text()))
    }
}

/// `Path<T>` whose rejection is an [`ApiError`].
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|r: PathRejection| ApiError::rejected(r.status(), r.body_text()))
    }
}

fn rejected_json(rejection: &JsonRejection) -> ApiError {
    ApiError::rejected(rejection.status(), rejection.body_text())
}
