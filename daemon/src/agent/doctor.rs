//! The daemon's half of `lazyboy doctor`: the config as it is on disk now, the model (a
//! tiny request, one attempt), each MCP server (started and listed), and web search (one
//! query), and whether commands can be sandboxed here. Each check says what it found and,
//! unless it is fine, what to do.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lazyboy_protocol::{CheckStatus, DoctorCheck, McpServerState};
use tokio_util::sync::CancellationToken;

use super::Runtime;
use crate::config::Config;
use crate::providers::{Message, ModelRequest, Provider};

fn check(name: &str, status: CheckStatus, detail: String, fix: Option<String>) -> DoctorCheck {
    DoctorCheck {
        name: name.to_owned(),
        status,
        detail,
        fix,
    }
}

pub async fn checks(rt: &Arc<Runtime>, home: &str) -> Vec<DoctorCheck> {
    let home = Path::new(home);
    let mut out = vec![config(home)];
    out.push(model(&rt.config).await);
    let servers = rt.mcp.names();
    if servers.is_empty() {
        out.push(check(
            "mcp",
            CheckStatus::Warn,
            "no MCP servers are configured".into(),
            Some(
                "to give agents MCP tools, add [mcp.servers.NAME] with `command` (stdio) or \
                 `url` (HTTP) to config.toml, then `lazyboy team edit AGENT --mcp NAME`"
                    .into(),
            ),
        ));
    }
    for name in servers {
        let Some(server) = rt.mcp.get(&name) else {
            continue;
        };
        let info = server.test().await;
        let label = format!("mcp {name}");
        out.push(if info.state == McpServerState::Running {
            check(
                &label,
                CheckStatus::Ok,
                format!(
                    "{} ({}) lists {} tools",
                    info.target,
                    info.transport,
                    info.tools.len()
                ),
                None,
            )
        } else {
            check(
                &label,
                CheckStatus::Fail,
                info.error.unwrap_or_else(|| "it did not start".into()),
                Some(format!(
                    "check [mcp.servers.{name}] in config.toml; try `{}` by hand, or see the \
                     daemon log; then `lazyboy mcp test {name}`",
                    info.target
                )),
            )
        });
    }
    out.push(web_search(rt).await);
    let default = rt
        .store
        .agent(crate::DEFAULT_AGENT)
        .await
        .ok()
        .map(|agent| agent.boundaries.sandbox(&agent.name));
    out.push(sandbox(default));
    out
}

/// Whether agents' host commands can be confined here (`workspace-write`, `read-only`), and
/// what the `default` agent (`lazyboy run`) runs under: said here once rather than by every
/// `lazyboy run`.
fn sandbox(default: Option<lazyboy_protocol::Sandbox>) -> DoctorCheck {
    let default = match default {
        Some(lazyboy_protocol::Sandbox::Off) => {
            "; `lazyboy run` (the default agent) runs commands unconfined, as you, by your \
             choice (`lazyboy team edit default --sandbox workspace-write` confines it)"
                .to_owned()
        }
        Some(sandbox) => format!(
            "; `lazyboy run` (the default agent) is confined too ({}; `lazyboy team edit \
             default --sandbox off` runs it unconfined, as you)",
            sandbox.as_str()
        ),
        None => String::new(),
    };
    match crate::confine::status() {
        Ok(what) => check(
            "sandbox",
            CheckStatus::Ok,
            format!(
                "{what}, through {}: agents' commands write only where their sandbox \
                 allows{default}",
                crate::confine::helper().display()
            ),
            None,
        ),
        Err(why) => check(
            "sandbox",
            CheckStatus::Fail,
            format!(
                "agents' commands cannot be confined ({why}): agents under workspace-write or \
                 read-only are refused every command"
            ),
            Some(
                "use a Linux kernel with Landlock enabled (5.13+, `lsm=...,landlock`), or \
                 `lazyboy team edit AGENT --sandbox off` for an agent you trust unconfined"
                    .into(),
            ),
        ),
    }
}

fn config(home: &Path) -> DoctorCheck {
    let path = home.join("config.toml");
    if !path.exists() {
        return check(
            "config",
            CheckStatus::Warn,
            format!("{} does not exist: nothing is configured", path.display()),
            Some(format!(
                "create {} to set up models, MCP servers and web search (see the README)",
                path.display()
            )),
        );
    }
    match Config::load(home) {
        Ok(_) => check(
            "config",
            CheckStatus::Ok,
            format!("{} parses", path.display()),
            None,
        ),
        Err(error) => check(
            "config",
            CheckStatus::Fail,
            format!("{error:#}"),
            Some(format!(
                "fix {} (the running daemon still uses what it read at start; restart it after)",
                path.display()
            )),
        ),
    }
}

async fn model(config: &Config) -> DoctorCheck {
    let mut provider = match config.provider_for(None) {
        Ok(provider) => provider,
        Err(error) => {
            return check(
                "model",
                CheckStatus::Fail,
                "no model is configured".into(),
                Some(error),
            );
        }
    };
    provider.retry.max_attempts = 1;
    provider.retry.empty_reply_retries = 0;
    provider.request_timeout = Duration::from_secs(30);
    let label = format!(
        "{} ({} at {})",
        provider.name, provider.model, provider.base_url
    );
    let provider = match Provider::new(provider) {
        Ok(provider) => provider,
        Err(error) => return check("model", CheckStatus::Fail, error.to_string(), None),
    };
    let request = ModelRequest {
        system: "You are a health check. Reply with the single word OK.".into(),
        messages: vec![Message::User { text: "OK?".into() }],
        tools: vec![],
    };
    match provider
        .complete(&request, &CancellationToken::new(), &mut |_| {})
        .await
    {
        Ok(reply) => {
            let said: String = reply
                .text
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            check(
                "model",
                CheckStatus::Ok,
                format!("{label} answered {said:?}"),
                None,
            )
        }
        Err(error) => check(
            "model",
            CheckStatus::Fail,
            format!("{label}: {error}"),
            Some(
                "check the provider's base_url, model and key variable in config.toml (or \
                 LAZYBOY_BASE_URL, LAZYBOY_MODEL, LAZYBOY_API_KEY)"
                    .into(),
            ),
        ),
    }
}

async fn web_search(rt: &Runtime) -> DoctorCheck {
    let Some(search) = &rt.web.search else {
        return check(
            "web search",
            CheckStatus::Warn,
            "no search provider is configured: agents have web_fetch but no web_search".into(),
            Some(format!(
                "to enable it, {}",
                crate::web::search::HOW_TO_ENABLE
            )),
        );
    };
    match search.run("LazyBoy", 1).await {
        Ok(answer) => check(
            "web search",
            CheckStatus::Ok,
            format!(
                "{:?} answered with {} results",
                search.kind,
                answer.hits.len()
            ),
            None,
        ),
        Err(error) => check(
            "web search",
            CheckStatus::Fail,
            error,
            Some("check [web_search] url and the key variable in config.toml".into()),
        ),
    }
}
