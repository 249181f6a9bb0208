//! The team as MCP tools: the daemon's MCP server at `/mcp` (streamable HTTP, on rmcp's
//! server), on both listeners behind the API's own authentication and TCP guard. `lazyboy
//! mcp serve` (the client crate) is a relay from its stdio to `/mcp` on the local socket, so
//! the tool set is written once, here, and both transports get the same answers.
//!
//! - `tools.rs`: the declarations (names, descriptions, schemas, annotations);
//! - `call.rs`: one call, through the runtime's own paths (no second implementation of
//!   asking, answering, deciding, telling or stopping), user mistakes as tool errors;
//! - `status.rs`: a task folded from its events, and its text; `wait.rs`: waiting on a task
//!   with progress notifications and cancellation;
//! - `files.rs`: deliverables as resources; `scope.rs`: which agents a client may reach.
//!
//! Sessions (protocol versions up to 2025-11-25) live in memory, one manager per listener, so
//! a session opened on TCP is unknown on the socket; a daemon restart forgets them (a client
//! gets 404 and opens another; the stdio relay does that by itself). Requests of the
//! 2026-07-28 protocol (`server/discover`, per-request metadata) are served statelessly.
//! Every stream ends on the daemon's shutdown token. This module imports `agent/` and
//! `store/`, never `api/` (which mounts it) nor `mcp/` (the client side).

mod call;
mod error;
mod files;
mod scope;
mod status;
mod tools;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::Runtime;
use call::Call;
use error::ToolError;
use scope::Scope;

/// The largest `/mcp` request body. Over the API's 1 MiB on purpose: a too-long `job` must
/// reach the tool, which refuses it with a tool error a model can act on.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// A session nobody used for this long is closed: longer than the longest wait, so a quiet
/// `wait_task` never outlives its session.
const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// Which listener a service answers on: its scope comes from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// The local socket: everything, narrowed by `lazyboy mcp serve --agents`.
    Socket,
    /// TCP: `[mcp_server] agents`.
    Tcp,
}

/// `/mcp` as a tower service, for one listener.
pub type McpService = StreamableHttpService<Team, LocalSessionManager>;

/// The service to mount at `/mcp` on `listener`; its streams end on `shutdown`.
pub fn service(
    runtime: Arc<Runtime>,
    listener: Listener,
    shutdown: CancellationToken,
) -> McpService {
    let team = Team {
        runtime,
        listener,
        shutdown: shutdown.clone(),
    };
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let config = StreamableHttpServerConfig::default()
        // The API's guard owns Host checks (loopback Host on a loopback listener, any on a
        // LAN one), and the socket has no host at all.
        .disable_allowed_hosts()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(MAX_REQUEST_BYTES);
    StreamableHttpService::new(move || Ok(team.clone()), Arc::new(sessions), config)
}

/// The MCP server: one per session (cheap clones sharing the runtime).
#[derive(Clone)]
pub struct Team {
    runtime: Arc<Runtime>,
    listener: Listener,
    shutdown: CancellationToken,
}

impl Team {
    fn scope(&self, context: &RequestContext<RoleServer>) -> Scope {
        let parts = context.extensions.get::<Parts>();
        match self.listener {
            Listener::Socket => Scope::of(None, parts),
            Listener::Tcp => {
                Scope::of(self.runtime.config.file.mcp_server.agents.as_deref(), parts)
            }
        }
    }

    fn call<'a>(&'a self, context: &'a RequestContext<RoleServer>) -> Call<'a> {
        Call {
            runtime: &self.runtime,
            scope: self.scope(context),
            context,
            shutdown: &self.shutdown,
        }
    }
}

/// A result type from its JSON. Marked complete (`resultType`, which 2026-07-28 requires; rmcp
/// drops it for clients of older versions).
fn built<T: serde::de::DeserializeOwned>(mut value: Value) -> Result<T, McpError> {
    if let Some(object) = value.as_object_mut() {
        object.insert("resultType".to_owned(), json!("complete"));
    }
    serde_json::from_value(value)
        .map_err(|e| McpError::internal_error(format!("cannot build the result: {e}"), None))
}

const INSTRUCTIONS: &str = "LazyBoy's named agents run long jobs in the background: they keep \
    working after this conversation ends, survive restarts, and may ask the person questions. \
    list_agents shows them; ask_agent hands one a job (wait_s to wait a while); wait_task and \
    task_status follow it; answer_task, approve_call and deny_call answer what it waits on; \
    task_files and resources/read fetch what it delivered.";

impl ServerHandler for Team {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("lazyboy", crate::VERSION))
        .with_instructions(INSTRUCTIONS)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tool = tools::all().into_iter().find(|t| t.name == name)?;
        serde_json::from_value(tools::listed(&tool)).ok()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools: Vec<Value> = tools::all().iter().map(tools::listed).collect();
        built(json!({ "tools": tools }))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let declared = tools::all();
        if !declared.iter().any(|t| t.name == request.name) {
            let names: Vec<&str> = declared.iter().map(|t| t.name).collect();
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}: the tools are {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        }
        let links_supported = context
            .protocol_version()
            .is_none_or(|v| v.as_str() >= ProtocolVersion::V_2025_06_18.as_str());
        let call = self.call(&context);
        let arguments = request.arguments.unwrap_or_default();
        let result = match call.run(&request.name, arguments).await {
            Ok(done) => {
                let mut content = vec![json!({"type": "text", "text": done.text})];
                if links_supported {
                    content.extend(done.links.iter().map(|file| {
                        json!({"type": "resource_link", "uri": file.uri, "name": file.path,
                               "size": file.size})
                    }));
                }
                json!({"content": content, "structuredContent": done.structured, "isError": false})
            }
            Err(ToolError::Cancelled) => {
                // rmcp does not drop a cancelled handler: this line is where its wait ended.
                tracing::info!(tool = %request.name, "an MCP call ended: cancelled");
                return Err(McpError::internal_error("the call was cancelled", None));
            }
            Err(error) => {
                json!({"content": [{"type": "text", "text": error.to_string()}], "isError": true})
            }
        };
        Ok(built::<rmcp::model::CallToolResult>(result)?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        // Deliverables are reached through task_files and the template: listing every
        // task's files would read every task's history.
        built(json!({ "resources": [] }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        built(json!({ "resourceTemplates": [files::template()] }))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let call = self.call(&context);
        Ok(files::read(&call, &request.uri).await?.into())
    }
}
