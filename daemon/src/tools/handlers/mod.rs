//! One file per tool. (Stub: being written.)

use std::sync::Arc;

use super::ToolHandler;

/// Every standard tool.
pub fn all() -> Vec<Arc<dyn ToolHandler>> {
    Vec::new()
}
