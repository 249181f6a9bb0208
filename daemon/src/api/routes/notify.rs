//! `/api/notify/*`: the notifier's face. The VAPID public key, browsers' Web Push
//! subscriptions (the endpoint is checked before anything is stored, and nothing is sent to
//! it then), channel status and test sends. Decisions are `notify::Notifier`'s.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{
    NotifyStatus, NotifyTestRequest, NotifyTestResult, PushSubscription, PushSubscriptionList,
    SubscribeRequest, VapidKey,
};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath};
use crate::notify::NotifyError;

impl From<NotifyError> for ApiError {
    fn from(error: NotifyError) -> ApiError {
        match error {
            NotifyError::Endpoint(_) | NotifyError::BadKey(_) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_subscription",
                error.to_string(),
            ),
            NotifyError::NoChannel(_) => ApiError::not_found(error.to_string()),
            NotifyError::Store(error) => error.into(),
            NotifyError::Config(_) | NotifyError::Vapid(_) => {
                tracing::error!(%error, "notifier");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the notifier failed; see the daemon's log",
                )
            }
        }
    }
}

/// `GET /api/notify`.
pub async fn status(State(state): State<AppState>) -> Result<Json<NotifyStatus>, ApiError> {
    Ok(Json(state.notify.status().await?))
}

/// `GET /api/notify/vapid`: the `applicationServerKey` for `pushManager.subscribe`.
pub async fn vapid(State(state): State<AppState>) -> Json<VapidKey> {
    Json(VapidKey {
        public_key: state.notify.public_key().to_owned(),
    })
}

/// `POST /api/notify/subscriptions`: 201; 400 for an endpoint or keys that are refused.
pub async fn subscribe(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<SubscribeRequest>,
) -> Result<(StatusCode, Json<PushSubscription>), ApiError> {
    let sub = state.notify.subscribe(&request).await?;
    Ok((StatusCode::CREATED, Json(sub)))
}

/// `GET /api/notify/subscriptions`.
pub async fn list(State(state): State<AppState>) -> Result<Json<PushSubscriptionList>, ApiError> {
    Ok(Json(PushSubscriptionList {
        subscriptions: state.notify.subscriptions().await?,
    }))
}

/// `DELETE /api/notify/subscriptions/{id}`: 204, or 404.
pub async fn unsubscribe(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    if state.notify.unsubscribe(&id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("no subscription {id:?}")))
    }
}

/// `POST /api/notify/test`: each channel's outcome.
pub async fn test(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<NotifyTestRequest>,
) -> Result<Json<NotifyTestResult>, ApiError> {
    Ok(Json(state.notify.test(request.channel.as_deref()).await?))
}
