//! The web, as agents reach it: `web_fetch` (a direct, anonymous GET) and `web_search` (a
//! configured provider). The tools themselves are `tools/handlers/web_fetch.rs` and
//! `web_search.rs`; this module owns the HTTP side, shared by every task of the daemon:
//!
//! - `policy.rs`: which addresses may be reached (public unicast, or `[web] allow_hosts`);
//! - `fetch.rs`: one hop at a time, each hop's addresses resolved here, checked, and pinned
//!   for its connection, so a name that resolves again differently (DNS rebinding) cannot
//!   slip past the check; a size cap and a deadline; no cookies, proxies or credentials;
//! - `text.rs`: HTML to readable text, JSON and text passed through, the rest described;
//! - `cache.rs`: the same URL within 10 minutes is served from memory;
//! - `search.rs`: the search providers (SearXNG, Brave, xAI Responses, the gateway).
//!
//! ```toml
//! [web]
//! allow_hosts = ["127.0.0.1:8080", "wiki.lan"]   # non-public hosts web_fetch may reach
//! timeout_secs = 30                              # whole fetch, redirects included
//! max_bytes = 5000000                            # body cap (after decompression)
//! ```

pub mod cache;
pub mod fetch;
pub mod policy;
pub mod search;
pub mod text;

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

pub use fetch::{FetchError, Fetched, Page, Resolve, SystemDns};

/// `[web]` in `config.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSection {
    /// Hosts that may be fetched although they are not public: `host` or `host:port`.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// The deadline of a whole fetch, redirects included (default 30 s).
    pub timeout_secs: Option<u64>,
    /// The largest body read, after decompression (default 5 MB); the rest is cut.
    pub max_bytes: Option<usize>,
}

/// What a fetch may do.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub allow: policy::AllowList,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub max_bytes: usize,
    pub max_redirects: usize,
}

impl FetchSettings {
    /// From `[web]`; a malformed `allow_hosts` entry is an error naming it.
    pub fn from_section(section: &WebSection) -> Result<FetchSettings, String> {
        let timeout = Duration::from_secs(section.timeout_secs.unwrap_or(30).max(1));
        Ok(FetchSettings {
            allow: policy::AllowList::parse(&section.allow_hosts)?,
            timeout,
            connect_timeout: timeout.min(Duration::from_secs(10)),
            max_bytes: section.max_bytes.unwrap_or(5_000_000).max(1024),
            max_redirects: 10,
        })
    }
}

/// The daemon's web client: fetch settings, the resolver, the page cache and the search
/// provider (if one is configured). One per daemon, shared by every task.
pub struct Web {
    pub settings: FetchSettings,
    pub resolver: Arc<dyn Resolve>,
    pub cache: cache::Cache,
    pub search: Option<search::Search>,
}

impl Web {
    /// From the config's `[web]` and `[web_search]` sections, with the system's DNS.
    pub fn new(web: &WebSection, search: &search::WebSearchSection) -> Result<Web, String> {
        Ok(Web {
            settings: FetchSettings::from_section(web)?,
            resolver: Arc::new(SystemDns),
            cache: cache::Cache::new(cache::TTL),
            search: search::Search::from_section(search)?,
        })
    }

    /// The defaults, without search.
    pub fn fallback() -> Web {
        Web {
            settings: FetchSettings {
                allow: policy::AllowList::default(),
                timeout: Duration::from_secs(30),
                connect_timeout: Duration::from_secs(10),
                max_bytes: 5_000_000,
                max_redirects: 10,
            },
            resolver: Arc::new(SystemDns),
            cache: cache::Cache::new(cache::TTL),
            search: None,
        }
    }
}
