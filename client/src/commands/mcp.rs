//! `lazyboy mcp ls|test NAME` (`serve` is `mcp_serve.rs`).

use hyper::Method;
use lazyboy_protocol::{McpList, McpServerInfo, McpServerState};

use crate::cli::McpCommand;
use crate::connection::Client;
use crate::render::clean;

pub async fn run(client: &Client, command: McpCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        McpCommand::Ls => {
            let list: McpList = client.get("/api/mcp").await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else if list.servers.is_empty() {
                println!(
                    "no MCP servers are configured: add [mcp.servers.NAME] to config.toml \
                     (see the README)"
                );
            } else {
                for server in &list.servers {
                    print!("{}", server_text(server));
                }
            }
            Ok(0)
        }
        McpCommand::Test { name } => {
            let path = format!("/api/mcp/{name}/test");
            let info: McpServerInfo = client.call(Method::POST, &path, None::<&()>).await?;
            if json {
                println!("{}", serde_json::to_string(&info)?);
            } else {
                print!("{}", server_text(&info));
            }
            Ok(if info.state == McpServerState::Running {
                0
            } else {
                1
            })
        }
        McpCommand::Serve {
            agents,
            print_config,
        } => crate::commands::mcp_serve::run(client, agents, print_config, json).await,
    }
}

/// One server: a header line, its error if any, then one line per tool.
pub fn server_text(server: &McpServerInfo) -> String {
    let mut out = format!(
        "{}  {}  {} {}",
        server.name,
        server.state.as_str(),
        server.transport,
        clean(&server.target)
    );
    if let Some(pid) = server.pid {
        out.push_str(&format!("  pid {pid}"));
    }
    if server.restarts > 0 {
        out.push_str(&format!("  restarted {}x", server.restarts));
    }
    out.push('\n');
    if let Some(error) = &server.error {
        out.push_str(&format!("  error: {}\n", clean(error)));
    }
    for tool in &server.tools {
        let mode = if tool.read_only { " (read-only)" } else { "" };
        let summary: String = clean(tool.description.lines().next().unwrap_or_default())
            .chars()
            .take(80)
            .collect();
        out.push_str(&format!("  {}{mode}  {summary}\n", tool.registered_as));
    }
    out
}
