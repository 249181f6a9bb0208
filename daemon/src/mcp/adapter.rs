//! The one adapter between MCP and the tool registry: each tool of each server the agent
//! uses becomes a [`ToolHandler`] named `mcp__<server>__<tool>`, with the server's own
//! description and JSON schema, dispatched through the daemon's [`Server`] (so a restarted
//! server serves the same registered tools).
//!
//! Effects: `readOnlyHint: true` makes a call a `read` (it may run beside other reads);
//! anything else is a `command` on a stdio server (it runs code on this machine) and
//! `network` on an HTTP one. A server that could not start when the task began is offered
//! as one tool, `mcp__<server>__unavailable`, whose call tries again and reports why.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::{Manager, Server};
use crate::tools::{
    Effect, Handled, Registry, ToolContext, ToolHandler, ToolOutcome, ToolOutput, spill,
};

/// `mcp__<server>__<tool>`, kept to what every model API accepts (`[A-Za-z0-9_-]`, at most
/// 64 characters).
pub fn tool_name(server: &str, tool: &str) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.chars().take(64).collect()
}

/// Whether the server marked the tool read-only (`annotations.readOnlyHint`).
pub fn read_only(tool: &Value) -> bool {
    tool.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true))
}

/// Registers the tools of `servers` (the agent's `mcp` list) in `registry`, starting the
/// servers that are not running (in parallel). A subagent limited to `allowed` tools gets
/// only those.
pub async fn register(
    manager: &Manager,
    registry: &mut Registry,
    servers: &[String],
    allowed: Option<&[String]>,
) {
    let starts = servers.iter().map(|name| async move {
        match manager.get(name) {
            Some(server) => (name, Some(server.clone()), server.tools().await),
            None => (
                name,
                None,
                Err(format!(
                    "no MCP server is configured as {name:?}: add [mcp.servers.{name}] to \
                     config.toml (configured: {})",
                    manager.names().join(", ")
                )),
            ),
        }
    });
    for (name, server, tools) in futures_util::future::join_all(starts).await {
        let tools: Vec<Arc<dyn ToolHandler>> = match (server, tools) {
            (Some(server), Ok(tools)) => tools
                .iter()
                .map(|tool| Arc::new(McpTool::new(server.clone(), tool)) as Arc<dyn ToolHandler>)
                .collect(),
            (None, Ok(_)) => Vec::new(),
            (server, Err(error)) => {
                tracing::warn!(server = %name, %error, "an agent's MCP server is unavailable");
                vec![Arc::new(Unavailable {
                    name: tool_name(name, "unavailable"),
                    description: format!(
                        "The MCP server {name} could not be started for this task: {error}. \
                         Calling this tries again and reports the outcome."
                    ),
                    server,
                })]
            }
        };
        for tool in tools {
            if allowed.is_none_or(|allowed| allowed.iter().any(|a| a == tool.name())) {
                registry.register(tool);
            }
        }
    }
}

/// One tool of one server.
pub struct McpTool {
    server: Arc<Server>,
    /// The server's name for it.
    tool: String,
    name: String,
    description: String,
    schema: Value,
    effect: Effect,
}

impl McpTool {
    fn new(server: Arc<Server>, tool: &Value) -> McpTool {
        let original = tool["name"].as_str().unwrap_or_default().to_owned();
        let mut schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({}));
        // Model APIs want an object schema with properties, even for a tool without any.
        if let Value::Object(map) = &mut schema {
            map.entry("type").or_insert_with(|| json!("object"));
            map.entry("properties").or_insert_with(|| json!({}));
        } else {
            schema = json!({"type": "object", "properties": {}});
        }
        let effect = if read_only(tool) {
            Effect::Read
        } else if server.config().url.is_some() {
            Effect::Network
        } else {
            Effect::Command
        };
        let description = tool["description"]
            .as_str()
            .filter(|d| !d.trim().is_empty())
            .map_or_else(|| format!("MCP tool {original}"), str::to_owned);
        McpTool {
            name: tool_name(&server.name, &original),
            description: format!("{description} (MCP server {})", server.name),
            server,
            tool: original,
            schema,
            effect,
        }
    }
}

impl ToolHandler for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn effect(&self, _args: &Value) -> Effect {
        self.effect
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let output = match self.server.call(&self.tool, args, ctx).await {
                Ok(result) => render(ctx, &result),
                Err(error) => ToolOutput::error(error),
            };
            Ok(Handled::Output(output))
        })
    }
}

/// A server that could not start: its one tool retries and reports.
struct Unavailable {
    name: String,
    description: String,
    server: Option<Arc<Server>>,
}

impl ToolHandler for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, _ctx: &'a ToolContext, _args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Some(server) = &self.server else {
                return Ok(ToolOutput::error(self.description.clone()).into());
            };
            Ok(match server.tools().await {
                Ok(tools) => ToolOutput::ok(format!(
                    "MCP server {} is running now with {} tools; they are offered from the \
                     agent's next task on",
                    server.name,
                    tools.len()
                )),
                Err(error) => ToolOutput::error(error),
            }
            .into())
        })
    }
}

/// A `CallToolResult` (as JSON) for the model: text blocks as they are, other blocks
/// described, structured content as JSON when no text carries it; `isError` → an error.
pub fn render(ctx: &ToolContext, result: &Value) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut has_text = false;
    for block in result["content"].as_array().into_iter().flatten() {
        let kind = block["type"].as_str().unwrap_or_default();
        let mime = block["mimeType"].as_str().unwrap_or("unknown type");
        let size = |field: &str| block[field].as_str().map_or(0, |d| d.len() * 3 / 4);
        parts.push(match kind {
            "text" => {
                has_text = true;
                block["text"].as_str().unwrap_or_default().to_owned()
            }
            "image" => format!("[image: {mime}, about {} bytes; not shown]", size("data")),
            "audio" => format!("[audio: {mime}, about {} bytes; not shown]", size("data")),
            "resource" => {
                let resource = &block["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                match resource["text"].as_str() {
                    Some(text) => {
                        has_text = true;
                        format!("[resource {uri}]\n{text}")
                    }
                    None => format!(
                        "[resource {uri}: {}, binary; not shown]",
                        resource["mimeType"].as_str().unwrap_or("unknown type")
                    ),
                }
            }
            "resource_link" => format!(
                "[resource link: {} {}]",
                block["uri"].as_str().unwrap_or_default(),
                block["name"].as_str().unwrap_or_default()
            ),
            other => format!("[{other} content]"),
        });
    }
    if let Some(structured) = result
        .get("structuredContent")
        .filter(|v| !has_text && !v.is_null())
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_owned()
    } else {
        parts.join("\n")
    };
    let text = spill::limit(ctx, text);
    if result["isError"] == Value::Bool(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing;

    #[test]
    fn names_are_prefixed_and_kept_plain() {
        assert_eq!(
            tool_name("time", "get_current_time"),
            "mcp__time__get_current_time"
        );
        assert_eq!(tool_name("fs", "read.file/x"), "mcp__fs__read_file_x");
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn results_become_text_and_is_error_an_error() {
        let (_dir, ctx) = testing::ctx();
        let ok = render(
            &ctx,
            &json!({"content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
            ]}),
        );
        assert!(!ok.is_error);
        assert!(ok.text.contains("hello"));
        assert!(
            ok.text
                .contains("[image: image/png, about 3 bytes; not shown]")
        );
        assert!(ok.text.contains("[resource file:///a]\ninside"));
        let structured = render(&ctx, &json!({"content": [], "structuredContent": {"t": 1}}));
        assert!(structured.text.contains("\"t\": 1"), "{}", structured.text);
        let failed = render(
            &ctx,
            &json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
        );
        assert!(failed.is_error);
        assert_eq!(failed.text, "no");
        assert!(render(&ctx, &json!({})).text.contains("no content"));
    }
}
