//! The retry loop around one provider attempt: the policy lives here and nowhere else.
//!
//! An attempt (`openai::complete_once` / `anthropic::complete_once`) either returns a whole
//! reply or an [`AttemptError`] that says whether trying again can help. This loop then:
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

use reqwest::header::{HeaderMap, RETRY_AFTER};
use tokio_util::sync::CancellationToken;

use super::{ModelReply, ModelRequest, Provider, ProviderError, RetryPolicy, WireFormat};

/// How one attempt failed, and whether another attempt may succeed.
#[derive(Debug)]
pub(super) struct AttemptError {
    pub error: ProviderError,
    pub retry: Retry,
}

/// Whether the retry loop may try again after an [`AttemptError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// The same request would fail the same way (bad request, bad key, unknown model).
    Never,
    /// A transient failure: back off per the policy.
    Backoff,
    /// The server said when to come back (`Retry-After`); still capped at `max_delay`.
    After(Duration),
}

impl AttemptError {
    /// A failure of the connection or the request (refused, reset, timed out).
    pub fn transport(provider: &Provider, error: &reqwest::Error) -> AttemptError {
        AttemptError {
            error: ProviderError::Transport {
                provider: provider.config.name.clone(),
                message: error_chain(error),
            },
            retry: Retry::Backoff,
        }
    }

    /// The body broke off mid-way (reset, truncated chunked encoding, timeout). The root
    /// cause says it best; the layers above it only repeat "error decoding response body".
    pub fn broken_stream(provider: &Provider, error: &reqwest::Error) -> AttemptError {
        let mut cause: &dyn std::error::Error = error;
        while let Some(source) = cause.source() {
            cause = source;
        }
        let kind = if error.is_timeout() {
            "the request timed out mid-stream"
        } else {
            "the stream broke off"
        };
        AttemptError {
            error: ProviderError::Transport {
                provider: provider.config.name.clone(),
                message: format!("{kind}: {cause}"),
            },
            retry: Retry::Backoff,
        }
    }

    /// A body we could not understand, or a stream that broke off incoherently. Retried:
    /// servers and proxies do cut streams, and the attempts are bounded.
    pub fn protocol(provider: &Provider, message: impl Into<String>) -> AttemptError {
        AttemptError {
            error: ProviderError::Protocol {
                provider: provider.config.name.clone(),
                message: message.into(),
            },
            retry: Retry::Backoff,
        }
    }

    /// An error status (from the HTTP response, or mapped from an in-stream error event).
    pub fn status(
        provider: &Provider,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    ) -> AttemptError {
        let retry = if !retryable_status(status) {
            Retry::Never
        } else if let Some(after) = retry_after {
            Retry::After(after)
        } else {
            Retry::Backoff
        };
        AttemptError {
            error: ProviderError::Http {
                provider: provider.config.name.clone(),
                status,
                message,
            },
            retry,
        }
    }
}

/// 408 (request timeout), 429 (rate limited) and every 5xx (including Anthropic's 529
/// "overloaded") are worth another try; any other status says the request itself is wrong.
fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// `Retry-After` in seconds (integer or decimal). The HTTP-date form is rare from model APIs
/// and is ignored: the exponential backoff applies instead.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds: f64 = value.parse().ok()?;
    // `try_`: a huge or negative value from a misbehaving server must not panic.
    Duration::try_from_secs_f64(seconds).ok()
}

/// reqwest's top-level message ("error sending request for url ...") hides the cause
/// ("connection refused", "operation timed out"); the chain says what happened.
fn error_chain(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

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
    request: &ModelRequest,
    cancel: &CancellationToken,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ModelReply, ProviderError> {
    let policy = provider.config.retry;
    let name = provider.config.name.as_str();
    let mut failures = 0u32;
    let mut empties = 0u32;
    loop {
        let attempt = async {
            match provider.config.wire {
                WireFormat::Openai => {
                    super::openai::complete_once(provider, request, &mut *on_text).await
                }
                WireFormat::Anthropic => {
                    super::anthropic::complete_once(provider, request, &mut *on_text).await
                }
            }
        };
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

    #[test]
    fn retry_after_takes_seconds_only() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(RETRY_AFTER, "0.25".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "-1".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "1e300".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn which_statuses_retry() {
        for status in [408, 429, 500, 502, 503, 529] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable_status(status), "{status}");
        }
    }
}
