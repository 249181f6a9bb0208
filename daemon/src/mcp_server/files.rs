//! Deliverables as MCP resources: `lazyboy://tasks/{task}/files/{path}`.
//!
//! `resources/read` goes through the runtime's one gate for deliverables
//! (`Runtime::deliverable`: only a file the task's last `report_done` listed, opened beneath
//! the task's workspace), then reads that open file, never re-opened by path, at most
//! [`MAX_RESOURCE_BYTES`]: the bytes travel inside one JSON-RPC message. UTF-8 files come
//! back as text, anything else as a base64 blob; either way the bytes are the file's.

use base64::Engine;
use lazyboy_protocol::mcp_server::{MAX_RESOURCE_BYTES, parse_file_uri};
use rmcp::ErrorData as McpError;
use rmcp::model::ReadResourceResult;
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::call::Call;
use super::error::ToolError;
use crate::agent::FileError;

/// The template `resources/templates/list` shows.
pub fn template() -> serde_json::Value {
    json!({
        "uriTemplate": "lazyboy://tasks/{task}/files/{path}",
        "name": "task-file",
        "title": "A file a task delivered",
        "description": "A deliverable of a LazyBoy task (task_files lists them), as it is on \
            disk now.",
    })
}

/// `resources/read` of a deliverable's URI.
pub async fn read(call: &Call<'_>, uri: &str) -> Result<ReadResourceResult, McpError> {
    let not_found = |why: String| McpError::resource_not_found(why, Some(json!({"uri": uri})));
    let Some((task, path)) = parse_file_uri(uri) else {
        return Err(not_found(format!(
            "{uri:?} is not a LazyBoy file: use lazyboy://tasks/{{task}}/files/{{path}} as \
             task_files lists them"
        )));
    };
    let task = call.task(&task).await.map_err(|e| match e {
        ToolError::Internal => McpError::internal_error(e.to_string(), None),
        other => not_found(other.to_string()),
    })?;
    let file = match call.runtime.deliverable(&task.id, &path).await {
        Ok((file, _name)) => tokio::fs::File::from_std(file),
        Err(FileError::Store(error)) => {
            tracing::error!(%error, "store failure reading a deliverable");
            return Err(McpError::internal_error(
                "internal error; see the daemon log",
                None,
            ));
        }
        Err(error) => return Err(not_found(error.to_string())),
    };
    let mut bytes = Vec::new();
    // One byte past the cap tells "too big" without reading the whole file.
    file.take(MAX_RESOURCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| not_found(format!("{path}: {e}")))?;
    if bytes.len() as u64 > MAX_RESOURCE_BYTES {
        return Err(McpError::invalid_params(
            format!(
                "{path} is over {MAX_RESOURCE_BYTES} bytes, the most resources/read returns: \
                 download it from the dashboard or GET /api/tasks/{}/files/{path}",
                task.id
            ),
            Some(json!({"uri": uri})),
        ));
    }
    let contents = match String::from_utf8(bytes) {
        Ok(text) => json!({"uri": uri, "mimeType": "text/plain", "text": text}),
        Err(error) => json!({
            "uri": uri,
            "mimeType": "application/octet-stream",
            "blob": base64::engine::general_purpose::STANDARD.encode(error.into_bytes()),
        }),
    };
    super::built(json!({"contents": [contents]}))
}
