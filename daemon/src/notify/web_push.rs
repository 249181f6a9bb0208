//! The Web Push channel (RFC 8030): one POST per device to its push service, the payload
//! encrypted to the browser's keys (`ece.rs`), signed for the push service with the
//! daemon's VAPID key (`vapid.rs`), to an endpoint checked like `web_fetch`'s addresses
//! (`endpoint.rs`). `TTL` is the notification's worth, `Urgency: high` when an agent waits,
//! `Topic` the task's (a newer notification replaces an older one on the device).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use lazyboy_protocol::NotifyPayload;

use super::outbox::{Attempt, ttl};
use super::vapid::Vapid;
use super::{ece, endpoint};
use crate::store::SubscriptionRow;
use crate::web::Resolve;
use crate::web::policy::AllowList;

/// What every push needs.
pub struct Pusher<'a> {
    pub vapid: &'a Vapid,
    pub subject: &'a str,
    pub allow: &'a AllowList,
    pub resolver: &'a dyn Resolve,
    pub timeout: Duration,
}

/// `Topic` (RFC 8030 5.4: at most 32 characters of the URL-safe base64 alphabet): the task's
/// id without its dashes, so one task's notifications replace each other.
pub fn topic(payload: &NotifyPayload) -> String {
    let source = payload.task.as_deref().unwrap_or(&payload.id);
    let clean: Vec<char> = source
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    clean[clean.len().saturating_sub(32)..].iter().collect()
}

impl Pusher<'_> {
    pub async fn send(
        &self,
        sub: &SubscriptionRow,
        payload: &NotifyPayload,
        body: &[u8],
    ) -> Attempt {
        let url = match endpoint::parse(&sub.endpoint, self.allow) {
            Ok(url) => url,
            Err(error) => return Attempt::Fatal(error.to_string()),
        };
        let addrs = match endpoint::addresses(&url, self.allow, self.resolver).await {
            Ok(addrs) => addrs,
            Err(endpoint::EndpointError::Dns(host, error)) => {
                return Attempt::Retry {
                    error: format!("cannot resolve {host}: {error}"),
                    retry_after: None,
                };
            }
            Err(error) => return Attempt::Fatal(error.to_string()),
        };
        let (Ok(p256dh), Ok(auth)) = (
            URL_SAFE_NO_PAD.decode(sub.p256dh.trim_end_matches('=')),
            URL_SAFE_NO_PAD.decode(sub.auth.trim_end_matches('=')),
        ) else {
            return Attempt::Fatal("the subscription's keys are not base64url".into());
        };
        let encrypted = match ece::encrypt(body, &p256dh, &auth) {
            Ok(encrypted) => encrypted,
            Err(error) => return Attempt::Fatal(error.to_string()),
        };
        let origin = url.origin().ascii_serialization();
        let now = crate::store::now_ms() / 1000;
        let authorization = match self.vapid.authorization(&origin, self.subject, now) {
            Ok(header) => header,
            Err(error) => return Attempt::Fatal(error.to_string()),
        };
        let client = match endpoint::pinned_client(&url, &addrs, self.timeout) {
            Ok(client) => client,
            Err(error) => return Attempt::Fatal(error),
        };
        let urgency = if payload.kind.blocks() {
            "high"
        } else {
            "normal"
        };
        let response = client
            .post(url)
            .header("TTL", ttl(payload.kind).as_secs().to_string())
            .header("Urgency", urgency)
            .header("Topic", topic(payload))
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Authorization", authorization)
            .body(encrypted)
            .send()
            .await;
        super::answer(response).await
    }
}
