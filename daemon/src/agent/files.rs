//! A task's deliverables: the files its last `report_done` listed, and the one path by which
//! each can be downloaded.
//!
//! Only a listed file is served, and only if it still resolves inside the task's workspace
//! (through `tools::workspace::resolve`, so a symlink swapped in since cannot lead outside).

use std::path::PathBuf;

use lazyboy_protocol::{Deliverable, EventBody};

use super::Runtime;
use crate::store::StoreError;
use crate::tools::workspace;

/// Why a file is not served.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0:?} is not among the task's deliverables")]
    NotListed(String),
    #[error("{0}")]
    Gone(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runtime {
    /// The task's deliverables, from its last `report_done` (none if it listed none).
    pub async fn deliverables(&self, task_id: &str) -> Result<Vec<Deliverable>, StoreError> {
        self.store.task(task_id).await?;
        let events = self.store.task_history(task_id).await?;
        Ok(events
            .into_iter()
            .rev()
            .find_map(|(_, body)| match body {
                EventBody::Deliverables { files } => Some(files),
                _ => None,
            })
            .unwrap_or_default())
    }

    /// Where a listed deliverable is on disk now.
    pub async fn deliverable(&self, task_id: &str, path: &str) -> Result<PathBuf, FileError> {
        let task = self.store.task(task_id).await?;
        let listed = self.deliverables(task_id).await?;
        if !listed.iter().any(|d| d.path == path) {
            return Err(FileError::NotListed(path.to_owned()));
        }
        let root = PathBuf::from(&task.workspace)
            .canonicalize()
            .map_err(|e| FileError::Gone(format!("the workspace is gone: {e}")))?;
        let real = workspace::resolve(&root, path).map_err(FileError::Gone)?;
        if !real.is_file() {
            return Err(FileError::Gone(format!("{path} is no longer a file")));
        }
        Ok(real)
    }
}
