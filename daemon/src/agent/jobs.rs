//! Handing an agent a job: the one path by which a task is created for a person's client
//! (`POST /api/agents/{name}/tasks`, `lazyboy ask`, the MCP tool `ask_agent`), so every client
//! checks the same things and queues the same way.
//!
//! A job for an agent that is busy queues behind its current task: the scheduler claims one
//! top-level task per agent at a time, oldest first.

use std::path::Path;

use super::Runtime;
use crate::store::{StoreError, TaskRow};

/// Why a job was not queued. Nothing is written when one of these is returned.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("the objective is empty")]
    Empty,
    #[error("workspace {0:?} must be an absolute path to an existing directory")]
    BadWorkspace(String),
    /// The workspace is one the agent's sandbox may not have (`confine::workspaces`).
    #[error("{0}")]
    Confined(String),
    #[error("cannot create the workspace {0}")]
    Workspace(std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runtime {
    /// Queues `objective` for agent `name`, in `workspace` (absolute, existing) or the
    /// agent's own, and wakes the scheduler.
    pub async fn create_task(
        &self,
        name: &str,
        objective: &str,
        workspace: Option<&str>,
    ) -> Result<TaskRow, JobError> {
        let objective = objective.trim();
        if objective.is_empty() {
            return Err(JobError::Empty);
        }
        // Checked first so an unknown agent is refused, not a stray directory made.
        let agent = self.store.agent(name).await?;
        let workspace = match workspace {
            Some(dir) => {
                let path = Path::new(dir);
                if !path.is_absolute() || !path.is_dir() {
                    return Err(JobError::BadWorkspace(dir.to_owned()));
                }
                dir.to_owned()
            }
            None => self
                .agent_workspace(&agent)
                .map_err(JobError::Workspace)?
                .display()
                .to_string(),
        };
        let sandbox = agent.boundaries.sandbox(&agent.name);
        if let Some(why) = crate::confine::workspaces::refusal(sandbox, Path::new(&workspace)) {
            return Err(JobError::Confined(why));
        }
        let task = self.store.create_task(name, objective, &workspace).await?;
        self.enqueue();
        Ok(task)
    }
}
