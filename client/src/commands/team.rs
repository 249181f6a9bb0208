//! `lazyboy team add|ls|show|edit|clear|rm` (also `lazyboy agent ...`).

use std::path::PathBuf;

use anyhow::Context;
use hyper::Method;
use lazyboy_protocol::{Agent, AgentList, CreateAgent, Effect, Sandbox, UpdateAgent};

use crate::cli::{AgentSettings, TeamCommand};
use crate::connection::Client;
use crate::render;

pub async fn run(client: &Client, command: TeamCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        TeamCommand::Add { name, settings } => {
            let node = settings.node.clone();
            let mcp = settings.mcp_list();
            let (approve, allow, sandbox) = settings.boundaries()?;
            let settings_git_write = settings.git_write;
            let (instructions, model, workspace) = settings.resolve()?;
            let request = CreateAgent {
                name,
                instructions,
                model,
                workspace,
                node,
                mcp,
                approve,
                allow,
                sandbox,
                git_write: settings_git_write,
            };
            let agent: Agent = client
                .call(Method::POST, "/api/agents", Some(&request))
                .await?;
            print_agent(&agent, json, "added")?;
        }
        TeamCommand::Ls => {
            let list: AgentList = client.get("/api/agents").await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                print!("{}", render::agent_table(&list.agents, render::now_ms()));
            }
        }
        TeamCommand::Show { name } => {
            let agent: Agent = client.get(&format!("/api/agents/{name}")).await?;
            print_agent(&agent, json, "")?;
        }
        TeamCommand::Edit { name, settings } => {
            let node = settings.node.clone();
            let mcp = settings.mcp_list();
            let (approve, allow, sandbox) = settings.boundaries()?;
            let git_write = settings.git_write;
            let (instructions, model, workspace) = settings.resolve()?;
            let boundaries =
                approve.is_some() || allow.is_some() || sandbox.is_some() || git_write.is_some();
            if instructions.is_none()
                && model.is_none()
                && workspace.is_none()
                && mcp.is_none()
                && node.is_none()
                && !boundaries
            {
                anyhow::bail!(
                    "nothing to change: give --instructions, --instructions-file, --model, \
                     --workspace, --node, --mcp, --approve, --allow, --sandbox or --git-write"
                );
            }
            let request = UpdateAgent {
                instructions,
                model,
                workspace,
                node,
                mcp,
                approve,
                allow,
                sandbox,
                git_write,
            };
            let path = format!("/api/agents/{name}");
            let agent: Agent = client.call(Method::PATCH, &path, Some(&request)).await?;
            print_agent(&agent, json, "updated")?;
        }
        TeamCommand::Clear { name } => {
            let path = format!("/api/agents/{name}/clear");
            let done: lazyboy_protocol::MessageAccepted =
                client.call(Method::POST, &path, None::<&()>).await?;
            if json {
                println!("{}", serde_json::to_string(&done)?);
            } else {
                println!(
                    "cleared {name}'s conversation (a new generation starts at seq {})",
                    done.seq
                );
            }
        }
        TeamCommand::Rm { name, force } => {
            let path = format!("/api/agents/{name}?force={force}");
            client
                .call::<serde_json::Value>(Method::DELETE, &path, None::<&()>)
                .await?;
            if !json {
                println!("removed agent {name}");
            }
        }
    }
    Ok(0)
}

fn print_agent(agent: &Agent, json: bool, verb: &str) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(agent)?);
    } else {
        if !verb.is_empty() {
            println!("{verb} agent {}", agent.name);
        }
        print!("{}", render::agent_details(agent, render::now_ms()));
    }
    Ok(())
}

/// What `--approve`, `--allow` and `--sandbox` set, as the API takes them.
type BoundaryFlags = (Option<Vec<Effect>>, Option<Vec<String>>, Option<Sandbox>);

impl AgentSettings {
    /// `--mcp a,b` as a list (`""`: none).
    fn mcp_list(&self) -> Option<Vec<String>> {
        self.mcp.as_ref().map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect()
        })
    }

    /// The effects named by `--approve` (comma-separated; "" is none), the `--allow` rules
    /// ("" alone clears them) and the sandbox.
    fn boundaries(&self) -> anyhow::Result<BoundaryFlags> {
        let approve = match &self.approve {
            Some(list) => Some(
                list.split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(|name| {
                        serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(
                            |_| {
                                anyhow::anyhow!(
                                    "unknown effect {name:?} in --approve: use command, \
                                     workspace_write, network or box"
                                )
                            },
                        )
                    })
                    .collect::<anyhow::Result<Vec<Effect>>>()?,
            ),
            None => None,
        };
        let allow = self.allow.as_ref().map(|rules| {
            rules
                .iter()
                .filter(|r| !r.trim().is_empty())
                .cloned()
                .collect()
        });
        let sandbox = self.sandbox.as_deref().and_then(Sandbox::parse);
        Ok((approve, allow, sandbox))
    }

    /// (instructions, model, workspace) as the API takes them: the file read, the workspace
    /// made absolute.
    fn resolve(self) -> anyhow::Result<(Option<String>, Option<String>, Option<String>)> {
        let instructions = match (self.instructions, self.instructions_file) {
            (Some(text), _) => Some(text),
            (None, Some(path)) => Some(
                std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
            ),
            (None, None) => None,
        };
        let workspace = match self.workspace {
            Some(dir) if dir.is_empty() => Some(String::new()),
            Some(dir) => Some(absolute(PathBuf::from(dir))?.display().to_string()),
            None => None,
        };
        Ok((instructions, self.model, workspace))
    }
}

fn absolute(dir: PathBuf) -> anyhow::Result<PathBuf> {
    dir.canonicalize()
        .with_context(|| format!("workspace {}", dir.display()))
}
