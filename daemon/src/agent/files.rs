//! A task's deliverables: the files its last `report_done` listed, and the one path by which
//! each can be downloaded.
//!
//! Only a listed file is served, opened beneath the task's workspace (`tools::workspace`),
//! and served from that open file: a symlink swapped in since cannot lead outside, and a
//! path swapped after the check cannot change what is sent.

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

    /// A listed deliverable, open as it is on disk now, and its name.
    pub async fn deliverable(
        &self,
        task_id: &str,
        path: &str,
    ) -> Result<(std::fs::File, String), FileError> {
        let task = self.store.task(task_id).await?;
        let listed = self.deliverables(task_id).await?;
        if !listed.iter().any(|d| d.path == path) {
            return Err(FileError::NotListed(path.to_owned()));
        }
        let path = path.to_owned();
        let open = tokio::task::spawn_blocking(move || {
            let root = workspace::Root::open(&PathBuf::from(&task.workspace))
                .map_err(|e| FileError::Gone(format!("the workspace is gone: {e}")))?;
            let rel = root
                .rel(&path)
                .map_err(|e| FileError::Gone(e.to_string()))?;
            let (file, _) = root.open_file(&rel).map_err(|e| match e {
                workspace::PathError::IsDir(_) | workspace::PathError::NotFile(_) => {
                    FileError::Gone(format!("{path} is no longer a file"))
                }
                other => FileError::Gone(other.to_string()),
            })?;
            let name = rel
                .path()
                .file_name()
                .map_or_else(|| "file".to_owned(), |n| n.to_string_lossy().into_owned());
            Ok((file, name))
        });
        open.await
            .map_err(|e| FileError::Gone(format!("cannot open the file: {e}")))?
    }
}
