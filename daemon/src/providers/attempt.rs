//! One attempt at a model request, as the wire files report it: an [`AttemptError`] says how
//! the attempt failed and whether trying again can help ([`Retry`]); `Retry-After` is read
//! here too. Below the wire files (`openai.rs`, `anthropic.rs`, `sse.rs`, `assemble.rs`),
//! which build these errors, and below `retry.rs`, which acts on them: so the retry loop
//! calls the wire formats through a function it is handed, and no wire file names it.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};

use super::{Provider, ProviderError};

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

#[cfg(test)]
mod tests {
    use super::*;

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
