//! Which environment variables hold the daemon's secrets: never passed to the commands agents
//! run (where an `env` would put them in the log) nor to MCP servers, unless a server's
//! `pass_env` names one.
//!
//! A leaf: it imports nothing of the crate, so every room that starts a process (`tools/`,
//! `sandbox/`, `mcp/`) and every room that learns a secret's name (`secrets`, `config`) can name
//! it without naming each other. The names are recorded at start (`cli`: the providers'
//! `api_key_env`) and when the config's reach sections are read ([`add`]); recording a
//! variable's value for redaction is `redact`'s, not this module's.

use std::sync::{OnceLock, RwLock};

/// The config's `api_key_env` entries, recorded once at start.
static CONFIGURED: OnceLock<Vec<String>> = OnceLock::new();

/// Names added at run time (web search keys, MCP tokens, notification secrets).
static MORE: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Records the config's `api_key_env` entries (call once, at start; a second call is ignored).
pub fn set_configured(names: Vec<String>) {
    let _ = CONFIGURED.set(names);
}

/// Adds secret variable names (the `[web_search]` key, MCP servers' tokens).
pub fn add(names: Vec<String>) {
    if let Ok(mut more) = MORE.write() {
        more.extend(names);
    }
}

/// Whether a variable must not reach agents' commands.
pub fn is_secret(name: &str) -> bool {
    name.starts_with("LAZYBOY_")
        || matches!(name, "OPENAI_API_KEY" | "ANTHROPIC_API_KEY")
        || CONFIGURED
            .get()
            .is_some_and(|names| names.iter().any(|n| n == name))
        || MORE
            .read()
            .is_ok_and(|names| names.iter().any(|n| n == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_added_names_are_secret() {
        assert!(is_secret("LAZYBOY_TOKEN"));
        assert!(is_secret("OPENAI_API_KEY"));
        assert!(!is_secret("SECRET_ENV_TEST_NAME"));
        add(vec!["SECRET_ENV_TEST_NAME".into()]);
        assert!(is_secret("SECRET_ENV_TEST_NAME"));
        assert!(!is_secret("PATH"));
    }
}
