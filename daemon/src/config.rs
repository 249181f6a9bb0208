//! Configuration: `<home>/config.toml` (every field optional) plus environment overrides.
//!
//! ```toml
//! default_provider = "local"
//! max_rounds_total = 5000          # LAZYBOY_MAX_ROUNDS_TOTAL wins
//! heartbeat_secs = 20
//! max_concurrent_tasks = 4         # across agents; each agent runs one task at a time
//! subagent_max_rounds = 128        # LAZYBOY_SUBAGENT_MAX_ROUNDS wins
//! database_url = "postgres://db.lan/lazyboy"  # LAZYBOY_DATABASE_URL wins; default: SQLite
//!
//! [providers.local]
//! wire = "openai"                   # or "anthropic"
//! base_url = "http://127.0.0.1:11434/v1"
//! model = "qwen2.5-coder"
//! api_key_env = "OLLAMA_API_KEY"    # the NAME of the variable holding the key, never the key
//! context_tokens = 32768            # its context window (LAZYBOY_CONTEXT_TOKENS wins)
//!
//! [retry]
//! max_attempts = 5
//! base_ms = 500
//!
//! [schedules]
//! run_missed = true                 # false: a slot missed while the daemon was down is skipped
//!
//! [prices."gpt-4.1"]                # US dollars per million tokens, for the cost shown
//! input = 2.0
//! cached_input = 0.5
//! output = 8.0
//!
//! [box]
//! name = "lazyboy-box"              # the container (its volume: <name>-home); LAZYBOY_BOX_NAME wins
//! image = "lazyboy/box:latest"      # LAZYBOY_BOX_IMAGE wins
//! ```
//!
//! `[web]`, `[web_search]` and `[mcp.servers.NAME]` are described in `web/mod.rs`,
//! `web/search.rs` and `mcp/mod.rs`.
//!
//! Environment: `LAZYBOY_BASE_URL`, `LAZYBOY_MODEL`, `LAZYBOY_API_KEY`, `LAZYBOY_WIRE`
//! (`openai`/`anthropic`) and `LAZYBOY_CONTEXT_TOKENS` define or override the default
//! provider, and only it (an agent's `--model NAME/MODEL` gets provider NAME's own
//! settings); `OPENAI_API_KEY` and
//! `ANTHROPIC_API_KEY` are used when nothing else names a key. `LAZYBOY_DATABASE_URL`
//! (`postgres://…`) puts the data in PostgreSQL, shared by several daemons (it is handled as
//! a secret: it may carry a password, which `database_url` in the file should not);
//! `LAZYBOY_LEASE_TTL_MS` changes how long a running task's lease lasts (default 30 s). Keys are read at the moment a
//! provider is built, from the secrets the daemon took out of its environment at start
//! ([`crate::secrets`]), and never written anywhere.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::providers::{ProviderConfig, RetryPolicy, WireFormat};

/// The file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub default_provider: Option<String>,
    pub max_rounds_total: Option<u64>,
    pub heartbeat_secs: Option<u64>,
    /// Tasks running at once across all agents (each agent runs one at a time).
    pub max_concurrent_tasks: Option<usize>,
    /// Model rounds a subagent may use before it ends `budget_exhausted`.
    pub subagent_max_rounds: Option<u64>,
    /// Where the data lives: `postgres://…` (several daemons on one database); default the
    /// SQLite file in the home.
    pub database_url: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderEntry>,
    #[serde(default)]
    pub retry: RetrySection,
    #[serde(default)]
    pub schedules: SchedulesSection,
    /// US dollars per million tokens, by model name (as the provider entry or the agent
    /// names it): `[prices."gpt-4.1"] input = 2.0, cached_input = 0.5, output = 8.0`.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    #[serde(default)]
    pub web: crate::web::WebSection,
    #[serde(default)]
    pub web_search: crate::web::search::WebSearchSection,
    #[serde(default)]
    pub mcp: crate::mcp::McpSection,
    /// `[notify]`: Web Push, ntfy, webhook and email (see `notify/config.rs`).
    #[serde(default)]
    pub notify: crate::notify::NotifySection,
    /// `[mcp_server]`: what MCP clients of `/mcp` on TCP may reach.
    #[serde(default)]
    pub mcp_server: McpServerSection,
    /// `[box]`: which box container and image (`LAZYBOY_BOX_NAME`, `LAZYBOY_BOX_IMAGE` win).
    #[serde(default, rename = "box")]
    pub sandbox: BoxSection,
    /// `[backup]`: the daemon's own backups (`every`, `keep`).
    #[serde(default)]
    pub backup: crate::keep::BackupSection,
    /// `[retention]`: old tool outputs replaced by stubs (`tool_output_days`, `every`).
    #[serde(default)]
    pub retention: crate::keep::RetentionSection,
}

/// `[mcp_server]`: the team as MCP tools at `/mcp`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// The agents a client on TCP may see and use (default: all). The local socket (`lazyboy
    /// mcp serve`) is narrowed by `--agents` instead.
    pub agents: Option<Vec<String>>,
}

/// A model's price in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    /// Cached input tokens (default: the input price).
    pub cached_input: Option<f64>,
    pub output: f64,
}

impl Price {
    /// What `input` (cached included), `cached` and `output` tokens cost, in millionths of a
    /// dollar (price per million tokens × tokens ÷ 10⁶ dollars).
    pub fn microusd(&self, input: u64, cached: u64, output: u64) -> u64 {
        let cached = cached.min(input);
        let cost = self.input * (input - cached) as f64
            + self.cached_input.unwrap_or(self.input) * cached as f64
            + self.output * output as f64;
        cost.max(0.0).round() as u64
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSection {
    /// The container's name (default `lazyboy-box`; its volume is `<name>-home`).
    pub name: Option<String>,
    /// The image (default `lazyboy/box:latest`, what `lazyboy box build` tags).
    pub image: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    pub wire: Option<WireFormat>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    /// The model's context window in tokens (default: known for the big families, else
    /// 128k); `LAZYBOY_CONTEXT_TOKENS` wins.
    pub context_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySection {
    pub max_attempts: Option<u32>,
    pub base_ms: Option<u64>,
    pub max_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulesSection {
    /// Whether a schedule whose slot passed while the daemon was down runs once at start
    /// (default `true`); a schedule's own `skip_missed` skips it either way.
    pub run_missed: Option<bool>,
}

impl SchedulesSection {
    /// `run_missed`, defaulting to `true`.
    pub fn run_missed(&self) -> bool {
        self.run_missed.unwrap_or(true)
    }
}

/// The configuration in force.
#[derive(Debug, Clone)]
pub struct Config {
    pub file: ConfigFile,
    pub max_rounds_total: u64,
    pub heartbeat: Duration,
    pub max_concurrent_tasks: usize,
    pub subagent_max_rounds: u64,
    /// How long a running task's lease lasts without renewal.
    pub lease_ttl_ms: i64,
}

/// The hint every "no model" error carries.
pub const HOW_TO_CONFIGURE: &str = "no model is configured: set LAZYBOY_BASE_URL and \
    LAZYBOY_MODEL (and LAZYBOY_API_KEY if the server needs one), or OPENAI_API_KEY / \
    ANTHROPIC_API_KEY, or add a [providers.NAME] entry to config.toml in the LazyBoy home \
    (see the README)";

impl Config {
    /// Reads `<home>/config.toml` if present. A malformed file is an error (with its message).
    pub fn load(home: &Path) -> anyhow::Result<Config> {
        let path = home.join("config.toml");
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => {
                toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ConfigFile::default(),
            Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
        };
        file.check()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let max_rounds_total = env("LAZYBOY_MAX_ROUNDS_TOTAL")
            .and_then(|v| v.parse().ok())
            .or(file.max_rounds_total)
            .unwrap_or(5000);
        let heartbeat = Duration::from_secs(file.heartbeat_secs.unwrap_or(20).max(1));
        let max_concurrent_tasks = file.max_concurrent_tasks.unwrap_or(4).max(1);
        let subagent_max_rounds = env("LAZYBOY_SUBAGENT_MAX_ROUNDS")
            .and_then(|v| v.parse().ok())
            .or(file.subagent_max_rounds)
            .unwrap_or(128);
        let lease_ttl_ms = env("LAZYBOY_LEASE_TTL_MS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(crate::store::DEFAULT_LEASE_TTL_MS)
            .max(300);
        Ok(Config {
            file,
            max_rounds_total,
            heartbeat,
            max_concurrent_tasks,
            subagent_max_rounds,
            lease_ttl_ms,
        })
    }

    /// The provider for an agent whose `model` is `agent_model`: `NAME/MODEL` picks a named
    /// provider, a bare `MODEL` overrides the default provider's model. Errors say how to
    /// configure one.
    ///
    /// The environment (`LAZYBOY_BASE_URL`, `LAZYBOY_WIRE`, `LAZYBOY_MODEL`,
    /// `LAZYBOY_API_KEY`, `LAZYBOY_CONTEXT_TOKENS`) configures the default provider only: an
    /// agent that names a provider gets that entry's own settings, so the README's quick setup
    /// never sends a named provider's requests (and key) to the environment's server.
    pub fn provider_for(&self, agent_model: Option<&str>) -> Result<ProviderConfig, String> {
        let (named, model_override) = match agent_model {
            Some(m) => match m.split_once('/') {
                Some((name, model)) if self.file.providers.contains_key(name) => {
                    (Some(name.to_owned()), Some(model.to_owned()))
                }
                _ => (None, Some(m.to_owned())),
            },
            None => (None, None),
        };
        let default = named.is_none();
        // The environment's settings, for the default provider only.
        let env_default = |name: &str| if default { env(name) } else { None };
        let name = named
            .or_else(|| self.file.default_provider.clone())
            .or_else(|| self.file.providers.keys().next().cloned());
        let entry = name.as_ref().and_then(|n| self.file.providers.get(n));

        let base_url =
            env_default("LAZYBOY_BASE_URL").or_else(|| entry.and_then(|e| e.base_url.clone()));
        let wire = env_default("LAZYBOY_WIRE")
            .and_then(|w| match w.as_str() {
                "anthropic" => Some(WireFormat::Anthropic),
                "openai" => Some(WireFormat::Openai),
                _ => None,
            })
            .or_else(|| entry.and_then(|e| e.wire))
            .unwrap_or_else(|| match &base_url {
                Some(url) if url.contains("anthropic") => WireFormat::Anthropic,
                Some(_) => WireFormat::Openai,
                None if env("ANTHROPIC_API_KEY").is_some() && env("OPENAI_API_KEY").is_none() => {
                    WireFormat::Anthropic
                }
                None => WireFormat::Openai,
            });
        let api_key = env_default("LAZYBOY_API_KEY")
            .or_else(|| entry.and_then(|e| e.api_key_env.as_deref()).and_then(env))
            .or_else(|| match wire {
                WireFormat::Openai => env("OPENAI_API_KEY"),
                WireFormat::Anthropic => env("ANTHROPIC_API_KEY"),
            });
        let base_url = match (base_url, &api_key, wire) {
            (Some(url), _, _) => url,
            (None, Some(_), WireFormat::Openai) => "https://api.openai.com/v1".to_owned(),
            (None, Some(_), WireFormat::Anthropic) => "https://api.anthropic.com".to_owned(),
            (None, None, _) => return Err(HOW_TO_CONFIGURE.to_owned()),
        };
        let model = model_override
            .or_else(|| env_default("LAZYBOY_MODEL"))
            .or_else(|| entry.and_then(|e| e.model.clone()))
            .ok_or_else(|| {
                format!("no model name for {base_url}: set LAZYBOY_MODEL or a provider's `model`")
            })?;
        let defaults = RetryPolicy::default();
        let retry = RetryPolicy {
            max_attempts: self
                .file
                .retry
                .max_attempts
                .unwrap_or(defaults.max_attempts)
                .max(1),
            base_delay: self
                .file
                .retry
                .base_ms
                .map_or(defaults.base_delay, Duration::from_millis),
            max_delay: self
                .file
                .retry
                .max_ms
                .map_or(defaults.max_delay, Duration::from_millis),
            empty_reply_retries: defaults.empty_reply_retries,
        };
        let context_tokens = env_default("LAZYBOY_CONTEXT_TOKENS")
            .and_then(|v| v.parse().ok())
            .or_else(|| entry.and_then(|e| e.context_tokens))
            .unwrap_or_else(|| crate::context::tokens::default_context(&model))
            .max(2048);
        Ok(ProviderConfig {
            context_tokens,
            name: name.unwrap_or_else(|| "env".to_owned()),
            wire,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model,
            retry,
            connect_timeout: Duration::from_secs(15),
            request_timeout: Duration::from_secs(180),
        })
    }
}

impl Config {
    /// `LAZYBOY_DATABASE_URL`, else `database_url`. Read when asked, not at load: the
    /// variable is a secret, handed over after the config was first read.
    pub fn database_url(&self) -> Option<String> {
        env("LAZYBOY_DATABASE_URL")
            .or_else(|| self.file.database_url.clone())
            .inspect(|url| crate::redact::register("database_url", url))
    }

    /// The price of `model`, if the config gives one.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.file.prices.get(model).copied()
    }
}

impl ConfigFile {
    /// What serde cannot check: the web, search and MCP sections make sense.
    pub fn check(&self) -> Result<(), String> {
        crate::web::FetchSettings::from_section(&self.web)?;
        crate::web::search::Search::from_section(&self.web_search)?;
        crate::notify::check(&self.notify)?;
        self.backup.check()?;
        self.retention.check()?;
        self.mcp.check()
    }

    /// The daemon's web client from the `[web]` and `[web_search]` sections (checked when the
    /// config was loaded; should they still be unusable: the defaults without search, and the
    /// error in the log). The variables holding search, MCP and notification secrets are
    /// withheld from agents from now on, and their values kept out of what is stored or sent.
    pub fn web_client(&self) -> crate::web::Web {
        let names = self.reach_secret_env();
        for name in &names {
            if let Ok(value) = std::env::var(name) {
                crate::redact::register(name, &value);
            }
        }
        crate::secret_env::add(names);
        crate::web::Web::new(&self.web, &self.web_search).unwrap_or_else(|error| {
            tracing::error!(%error, "the [web] or [web_search] section is unusable");
            crate::web::Web::fallback()
        })
    }

    /// Variable names holding secrets the web search and MCP sections name (withheld from
    /// agents' commands and MCP servers, like the providers' keys).
    pub fn reach_secret_env(&self) -> Vec<String> {
        let search = crate::web::search::Search::from_section(&self.web_search)
            .ok()
            .flatten()
            .and_then(|s| s.key_env().map(str::to_owned));
        search
            .into_iter()
            .chain(self.mcp.secret_env())
            .chain(self.notify.secret_env())
            .collect()
    }
}

/// A setting or key from the environment; secrets come from [`crate::secrets`], which took
/// them out of the process's environment at start.
fn env(name: &str) -> Option<String> {
    crate::secrets::var(name).filter(|v| !v.trim().is_empty())
}
