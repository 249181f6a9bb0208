//! The daemon's half of `lazyboy doctor`: the config as it is on disk now, the model (a
//! tiny request, one attempt), each MCP server (started and listed), and web search (one
//! query), and whether commands can be sandboxed here: Landlock's ABI and the rules it
//! covers, seccomp, the mount namespace that protects git files, and the tasks' cgroups.
//! Each check says what it found and, unless it is fine, what to do.

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
    out.extend(sandbox(default));
    out
}

/// Whether agents' host commands can be confined here (`workspace-write`, `read-only`), and
/// how: each layer of the sandbox, then the containment of a task's processes; and what the
/// `default` agent (`lazyboy run`) runs under, said here once rather than by every run.
fn sandbox(default: Option<lazyboy_protocol::Sandbox>) -> Vec<DoctorCheck> {
    let mut out = vec![landlock(&default_agent(default))];
    if cfg!(target_os = "linux") {
        let layers = crate::confine::layers();
        out.push(match &layers.seccomp {
            Ok(()) => check(
                "seccomp",
                CheckStatus::Ok,
                "confined commands cannot push terminal input (TIOCSTI, TIOCLINUX), open UNIX \
                 sockets (Docker's, the daemon's, D-Bus, abstract ones) or use io_uring"
                    .into(),
                None,
            ),
            Err(why) => check(
                "seccomp",
                CheckStatus::Fail,
                format!(
                    "no seccomp filter can be installed ({why}): confined commands are refused"
                ),
                Some(
                    "use a kernel with CONFIG_SECCOMP_FILTER (every distribution's has it)".into(),
                ),
            ),
        });
        out.push(match &layers.namespace {
            Ok(()) => check(
                "git files",
                CheckStatus::Ok,
                "a mount namespace keeps the repositories' .git read-only for workspace-write \
                 agents (unless `--git-write true`)"
                    .into(),
                None,
            ),
            Err(why) => check(
                "git files",
                CheckStatus::Warn,
                format!(
                    "not protected: no mount namespace can be made here ({why}), so a \
                     workspace-write agent's commands can write .git/config and hooks, which \
                     your next git command runs"
                ),
                Some(
                    "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
                     or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or run the \
                     daemon as root; meanwhile do not run git in a confined agent's workspace \
                     before reading what it changed in .git"
                        .into(),
                ),
            ),
        });
    }
    out.push(cgroups());
    out
}

/// What the `default` agent runs under, as a clause of the sandbox check.
fn default_agent(default: Option<lazyboy_protocol::Sandbox>) -> String {
    match default {
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
    }
}

fn landlock(default: &str) -> DoctorCheck {
    match crate::confine::landlock::abi() {
        Ok(abi) => {
            let rules = crate::confine::landlock::rules_at(abi).join(", ");
            let missing = match abi {
                0..5 => " (this kernel lacks the ioctl rule, ABI 5, and the scopes, ABI 6)",
                5 => " (this kernel lacks the scopes of signals and abstract sockets, ABI 6)",
                _ => "",
            };
            check(
                "sandbox",
                if abi >= 6 {
                    CheckStatus::Ok
                } else {
                    CheckStatus::Warn
                },
                format!(
                    "landlock (ABI {abi}), through {}: {rules}{missing}{default}",
                    crate::confine::helper().display()
                ),
                (abi < 6).then(|| "a Linux kernel 6.12 or newer has every rule".to_owned()),
            )
        }
        Err(why) => match crate::confine::status() {
            // macOS: Seatbelt.
            Ok(what) => check("sandbox", CheckStatus::Ok, what.clone(), None),
            Err(_) => check(
                "sandbox",
                CheckStatus::Fail,
                format!(
                    "agents' commands cannot be confined ({why}): agents under workspace-write \
                     or read-only are refused every command"
                ),
                Some(
                    "use a Linux kernel with Landlock enabled (5.13+, `lsm=...,landlock`), or \
                     `lazyboy team edit AGENT --sandbox off` for an agent you trust unconfined"
                        .into(),
                ),
            ),
        },
    }
}

/// Whether each task's processes are contained (its cgroup), or how far they are without.
fn cgroups() -> DoctorCheck {
    match crate::confine::cgroup::status() {
        Some(Ok(base)) => check(
            "cgroups",
            CheckStatus::Ok,
            format!(
                "each task's commands run in a cgroup of their own under {}, killed whole when \
                 the task ends, is stopped or the daemon stops",
                base.display()
            ),
            None,
        ),
        Some(Err(why)) => check(
            "cgroups",
            CheckStatus::Warn,
            format!(
                "no cgroups ({why}): a task's processes are found by the daemon as their \
                 subreaper, so one that detaches and clears its LAZYBOYD_COMMAND_ID outlives \
                 its task until the daemon stops, and after a kill -9 of the daemon it is not \
                 stopped at all"
            ),
            Some(
                "run the daemon as the service (`lazyboy service install`: its unit has \
                 Delegate=yes), or as root"
                    .into(),
            ),
        ),
        None => check(
            "cgroups",
            CheckStatus::Warn,
            "not set up (the daemon did not start them)".into(),
            None,
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
