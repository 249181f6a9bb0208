//! `lazyboy agent add|ls|rm`.

use hyper::Method;
use lazyboy_protocol::{Agent, AgentList, CreateAgent};

use crate::cli::AgentCommand;
use crate::connection::Client;
use crate::render;

pub async fn run(client: &Client, command: AgentCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        AgentCommand::Add {
            name,
            instructions,
            model,
        } => {
            let request = CreateAgent {
                name,
                instructions,
                model,
            };
            let agent: Agent = client
                .call(Method::POST, "/api/agents", Some(&request))
                .await?;
            if json {
                println!("{}", serde_json::to_string(&agent)?);
            } else {
                println!("added agent {}", agent.name);
            }
        }
        AgentCommand::Ls => {
            let list: AgentList = client.get("/api/agents").await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                print!("{}", render::agent_table(&list.agents));
            }
        }
        AgentCommand::Rm { name } => {
            let path = format!("/api/agents/{name}");
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
