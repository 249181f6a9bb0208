//! What an MCP call's failure is ([`ToolError`]), and how the runtime's and the store's errors
//! become one. Below the call (`call.rs`) and the wait (`wait.rs`), which both return it, so
//! that neither names the other for it.

use crate::agent::AnswerError;
use crate::store::StoreError;

/// Why a call did nothing (or, for `Internal`, failed inside).
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("bad arguments for {tool}: {message}")]
    BadArguments { tool: &'static str, message: String },
    #[error("no agent named {0:?} (list_agents shows the agents you may use)")]
    NoAgent(String),
    #[error("no task {0:?}")]
    NoTask(String),
    /// The runtime refused (not waiting, bad option, empty answer, a bad workspace).
    #[error("{0}")]
    Refused(String),
    #[error("the call was cancelled")]
    Cancelled,
    #[error("internal error; see the daemon log")]
    Internal,
}

impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> ToolError {
        match error {
            StoreError::NoSuchAgent(name) => ToolError::NoAgent(name),
            StoreError::NoSuchTask(id) => ToolError::NoTask(id),
            error @ StoreError::Changed { .. } => ToolError::Refused(error.to_string()),
            other => {
                tracing::error!(error = %other, "store failure in an MCP call");
                ToolError::Internal
            }
        }
    }
}

impl From<AnswerError> for ToolError {
    fn from(error: AnswerError) -> ToolError {
        match error {
            AnswerError::Store(error) => error.into(),
            other => ToolError::Refused(other.to_string()),
        }
    }
}
