//! The retry loop around one provider attempt: the policy lives here and nowhere else.
//!
//! An attempt (one wire format's `complete_once`, handed in as a [`Once`]: this loop names no
//! wire file) either returns a whole reply or an [`AttemptError`] that says whether trying
//! again can help. This loop then:
//!
//! - retries transport failures, timeouts, 408/429/5xx, in-stream overload errors, broken
//!   streams and bodies it cannot make sense of, up to `max_attempts` attempts in all, sleeping `base_delay * 2^(n-1)` (capped at
//!   `max_delay`) or the server's `Retry-After` (also capped) in between;
//! - fails at once on other statuses (a 400 for an over-long context, a 401 for a bad key),
//!   carrying the server's own message;
//! - retries a reply with neither text nor tool calls `empty_reply_retries` more times, then
//!   returns [`ProviderError::Empty`]; those retries are counted apart from `max_attempts`;
//! - returns [`ProviderError::Cancelled`] as soon as `cancel` fires, whether mid-request,
//!   mid-stream or mid-backoff: the in-flight future is dropped, which closes the connection.
//!
//! Text deltas reach `on_text` as they arrive, so a retried attempt streams its text again
//! after the failed attempt's partial text. `on_text` is a live preview; the returned
//! [`ModelReply`] (exactly the successful attempt's deltas, concatenated) is the record.

use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::attempt::{AttemptError, Retry};
use super::{ModelReply, ModelRequest, Provider, ProviderError, RetryPolicy};

/// One attempt of a wire format: send `request`, stream its text to the callback, return the
/// whole reply (`openai::complete_once`, `anthropic::complete_once`).
pub(super) type Once = for<'a> fn(
    &'a Provider,
    &'a ModelRequest,
    &'a mut (dyn FnMut(&str) + Send),
) -> BoxFuture<'a, Result<ModelReply, AttemptError>>;

/// The delay before retry number `retry` (1-based): `base * 2^(retry-1)`, capped.
fn backoff(policy: &RetryPolicy, retry: u32) -> Duration {
    let factor = 2u32.saturating_pow(retry.saturating_sub(1));
    policy
        .base_delay
        .saturating_mul(factor)
        .min(policy.max_delay)
}

/// A reply with neither text (beyond whitespace) nor tool calls gives the loop nothing to do.
fn is_empty(reply: &ModelReply) -> bool {
    reply.text.trim().is_empty() && reply.tool_calls.is_empty()
}

/// See the module doc for the policy.
pub(super) async fn complete(
    provider: &Provider,
    once: Once,
    request: &ModelRequest,
    cancel: &CancellationToken,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ModelReply, ProviderError> {
    let policy = provider.config.retry;
    let name = provider.config.name.as_str();
    let mut failures = 0u32;
    let mut empties = 0u32;
    loop {
        let attempt = once(provider, request, &mut *on_text);
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
            outcome = attempt => outcome,
        };
        let delay = match outcome {
            Ok(reply) if is_empty(&reply) => {
                empties += 1;
                if empties > policy.empty_reply_retries {
                    return Err(ProviderError::Empty {
                        provider: name.to_owned(),
                        attempts: empties,
                    });
                }
                tracing::warn!(provider = name, empties, "empty model reply; retrying");
                backoff(&policy, empties)
            }
            Ok(reply) => return Ok(reply),
            Err(AttemptError { error, retry }) => {
                failures += 1;
                let delay = match retry {
                    Retry::Never => return Err(error),
                    _ if failures >= policy.max_attempts => return Err(error),
                    Retry::Backoff => backoff(&policy, failures),
                    Retry::After(after) => after.min(policy.max_delay),
                };
                tracing::warn!(
                    provider = name,
                    attempt = failures,
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    %error,
                    "model request failed; retrying"
                );
                delay
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(700),
            empty_reply_retries: 3,
        };
        let delays: Vec<u128> = (1..=6).map(|n| backoff(&policy, n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 700, 700, 700]);
        assert_eq!(backoff(&policy, u32::MAX), Duration::from_millis(700));
    }
}
