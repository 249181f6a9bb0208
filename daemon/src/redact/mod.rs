//! Redaction: no secret the daemon knows is stored or sent, in plain or encoded form.
//!
//! The secrets are the provider keys and the other values handed over at start
//! ([`crate::secrets`]: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `LAZYBOY_API_KEY`,
//! `LAZYBOY_TOKEN`, each provider's `api_key_env`, `LAZYBOY_DATABASE_URL` and the password in
//! it), and whatever is registered later through [`register`], the one way in: the API token
//! in `<home>/token` (read, written, rotated), the database URL from the config file, the
//! web search and MCP keys. Registering rebuilds the one matcher ([`matcher::Matcher`]); the
//! old secrets stay (a rotated-out token is still kept out of the log).
//!
//! Where it applies: every event the store writes (`store::events::encode` redacts the whole
//! body: tool results, the model's replies and deltas, its calls' arguments, messages,
//! questions, plans, summaries, verdicts; the SSE frame and the log are that same text), the
//! task row's final message, memory writes and subagent objectives. Requests to the model are
//! built from the log, so they carry what it carries. The model's streamed text is held back
//! by [`Stream`] so a secret split across deltas is caught whole.
//!
//! What it cannot catch is said in `docs/architecture.md` (Boundaries): any transformation
//! other than the forms in [`forms`] (compressed, encrypted, reversed, interleaved), a secret
//! cut into pieces that land in different events, a prefix or part of a secret, images.

mod forms;
mod matcher;
mod stream;

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use serde_json::Value;

use matcher::Matcher;
pub use stream::Stream;

/// The known secrets and the matcher built over them.
struct Registry {
    secrets: Vec<(String, String)>,
    matcher: Arc<Matcher>,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(|| {
    let secrets = with_parts(crate::secrets::known());
    RwLock::new(Registry {
        matcher: Arc::new(Matcher::build(&secrets)),
        secrets,
    })
});

/// Adds a secret under `name` (what `[redacted NAME]` says) and rebuilds the matcher, unless
/// it is known already or too short to look for. Cheap to call again with the same value.
pub fn register(name: &str, value: &str) {
    let value = value.trim();
    if matcher::squeeze(value.as_bytes()).len() < matcher::MIN_LEN {
        return;
    }
    let added = with_parts(vec![(name.to_owned(), value.to_owned())]);
    {
        let registry = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
        if added
            .iter()
            .all(|(_, v)| registry.secrets.iter().any(|(_, s)| s == v))
        {
            return;
        }
    }
    let mut registry = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    for (name, value) in added {
        if !registry.secrets.iter().any(|(_, s)| *s == value) {
            registry.secrets.push((name, value));
        }
    }
    registry.matcher = Arc::new(Matcher::build(&registry.secrets));
    tracing::debug!(
        secrets = registry.secrets.len(),
        "the redaction matcher was rebuilt"
    );
}

/// The matcher in force now.
fn current() -> Arc<Matcher> {
    REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .matcher
        .clone()
}

/// `text` with every known secret replaced by `[redacted NAME]` (borrowed when it has none).
pub fn text(text: &str) -> Cow<'_, str> {
    current().redact(text)
}

/// Every string in `value` redacted in place (object keys are the daemon's own names).
pub fn json(value: &mut Value) {
    let matcher = current();
    if matcher.longest() > 0 {
        json_with(&matcher, value);
    }
}

fn json_with(matcher: &Matcher, value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(clean) = matcher.redact(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| json_with(matcher, v)),
        Value::Object(map) => map.values_mut().for_each(|v| json_with(matcher, v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `secrets` plus the parts of them that are secrets of their own: the password of a
/// database URL (as written and percent-decoded).
fn with_parts(secrets: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(secrets.len());
    for (name, value) in secrets {
        if let Ok(url) = url::Url::parse(&value)
            && let Some(password) = url.password()
        {
            let name = format!("{name} password");
            let decoded = percent_decode(password);
            if decoded != password {
                out.push((name.clone(), decoded));
            }
            out.push((name, password.to_owned()));
        }
        out.push((name, value));
    }
    out
}

/// `%XX` sequences decoded (a URL's password may hold any byte that way).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_secret_is_redacted_everywhere_in_a_json_value() {
        register("TEST_REGISTERED", "lb-registered-5e4d3c2b1a");
        let mut value = serde_json::json!({
            "text": "it is lb-registered-5e4d3c2b1a",
            "calls": [{"arguments": "{\"cmd\":\"echo lb-registered-\\n5e4d3c2b1a\"}"}],
            "n": 3,
        });
        json(&mut value);
        assert_eq!(value["text"], "it is [redacted TEST_REGISTERED]");
        assert_eq!(
            value["calls"][0]["arguments"],
            "{\"cmd\":\"echo [redacted TEST_REGISTERED]\"}"
        );
        assert_eq!(value["n"], 3);
        // Registering again changes nothing; a too short value is not registered.
        register("TEST_REGISTERED", "lb-registered-5e4d3c2b1a");
        register("TEST_SHORT", "abc");
        assert_eq!(text("abc"), "abc");
    }

    #[test]
    fn a_database_urls_password_is_a_secret_of_its_own() {
        let parts = with_parts(vec![(
            "LAZYBOY_DATABASE_URL".into(),
            "postgres://lazy:p%40ss-w0rd-42@db.lan/lazyboy".into(),
        )]);
        let values: Vec<&str> = parts.iter().map(|(_, v)| v.as_str()).collect();
        assert!(values.contains(&"p@ss-w0rd-42"), "{values:?}");
        assert!(values.contains(&"p%40ss-w0rd-42"), "{values:?}");
        assert_eq!(parts.len(), 3);
        assert_eq!(
            with_parts(vec![("A".into(), "sk-no-url-here".into())]).len(),
            1
        );
    }
}
