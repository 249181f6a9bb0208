//! `lazyboy mcp serve [--agents a,b] [--print-config]`: the team as an MCP server on stdio
//! (`mcp_relay`), or the configuration to paste into a client: stdio for this machine, and
//! the daemon's `/mcp` URL with its bearer token for a client that speaks streamable HTTP
//! (from another machine too, when the daemon listens on the LAN).

use lazyboy_protocol::valid_agent_name;
use serde_json::json;

use crate::connection::Client;
use crate::{daemon_proc, mcp_relay};

pub async fn run(
    client: &Client,
    agents: Option<String>,
    print_config: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let agents = match agents {
        None => None,
        Some(list) => {
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            if let Some(bad) = names.iter().find(|n| !valid_agent_name(n)) {
                anyhow::bail!("--agents: {bad:?} is not an agent name (give a,b,c)");
            }
            Some(names.join(","))
        }
    };
    if print_config {
        return print(client, agents.as_deref(), json).await;
    }
    mcp_relay::serve(client.clone(), agents).await
}

/// The stdio and HTTP configs for this home, with the binary's and home's full paths (a
/// desktop app's environment often has neither on its PATH).
async fn print(client: &Client, agents: Option<&str>, json: bool) -> anyhow::Result<i32> {
    let health = daemon_proc::ensure_running(client).await?;
    let token = client.token().ok_or_else(|| {
        anyhow::anyhow!(
            "no credential in {}: is the daemon's home right?",
            client.home().display()
        )
    })?;
    let url = format!("{}mcp", with_slash(&health.url));
    let lan: Vec<String> = health
        .lan_urls
        .iter()
        .map(|u| format!("{}mcp", with_slash(u)))
        .collect();
    let program = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "lazyboy".to_owned());
    let mut args = vec![
        "--home".to_owned(),
        client.home().display().to_string(),
        "mcp".to_owned(),
        "serve".to_owned(),
    ];
    if let Some(agents) = agents {
        args.extend(["--agents".to_owned(), agents.to_owned()]);
    }
    let bearer = format!("Bearer {token}");
    let stdio = json!({"command": program, "args": args});
    let http = json!({"url": url, "headers": {"Authorization": bearer}});
    if json {
        println!(
            "{}",
            json!({"stdio": stdio, "http": http, "lan_urls": lan, "token": token})
        );
        return Ok(0);
    }
    println!("stdio (this machine), for claude_desktop_config.json or ~/.cursor/mcp.json:");
    println!("  {}", json!({"mcpServers": {"lazyboy": stdio}}));
    println!("\nstreamable HTTP: {url}");
    println!("  header  Authorization: {bearer}");
    println!("  {}", json!({"mcpServers": {"lazyboy": http}}));
    println!(
        "\nCodex (~/.codex/config.toml), with LAZYBOY_TOKEN set to the token in its environment:"
    );
    println!(
        "  [mcp_servers.lazyboy]\n  url = {url:?}\n  bearer_token_env_var = \"LAZYBOY_TOKEN\"\n  tool_timeout_sec = 660"
    );
    for other in &lan {
        println!("\nfrom the LAN: {other} (same header)");
    }
    if agents.is_some() {
        println!(
            "\n(--agents narrows stdio only; over HTTP `[mcp_server] agents` in config.toml \
             decides)"
        );
    }
    eprintln!("(the token is the home's credential: whoever has it acts as you)");
    Ok(0)
}

fn with_slash(url: &str) -> String {
    if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    }
}
