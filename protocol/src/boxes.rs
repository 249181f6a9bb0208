//! The box: its status, holders and lock as the API shows them.

use serde::{Deserialize, Serialize};

/// `GET /api/box`: the box (the shared Linux desktop in Docker) as the daemon sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BoxStatus {
    pub state: BoxState,
    /// Why it is `unavailable` or in `error` (what to do about it).
    #[serde(default)]
    pub reason: Option<String>,
    /// The image the daemon runs (`lazyboy/box:latest` unless configured).
    #[serde(default)]
    pub image: Option<String>,
    /// The container's name, when it exists.
    #[serde(default)]
    pub container: Option<String>,
    /// Who holds the screen and browser.
    #[serde(default)]
    pub holder: Option<BoxHolder>,
    /// Who waits for them, first in line first.
    #[serde(default)]
    pub queue: Vec<BoxHolder>,
    /// Where a person watches and takes over: the daemon's `/novnc/` page (a path on the
    /// daemon's own origin), once the box runs.
    #[serde(default)]
    pub novnc: Option<String>,
}

/// Where the box is.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BoxState {
    /// No Docker engine answers, or the image is missing (`reason` says which).
    #[default]
    Unavailable,
    /// Docker and the image are there; the container is not created yet.
    Absent,
    Stopped,
    /// The container runs; its browser does not answer yet.
    Starting,
    /// The container runs and its browser answers (CDP).
    Running,
    /// It failed to start or died (`reason`).
    Error,
}

impl BoxState {
    pub fn as_str(self) -> &'static str {
        match self {
            BoxState::Unavailable => "unavailable",
            BoxState::Absent => "absent",
            BoxState::Stopped => "stopped",
            BoxState::Starting => "starting",
            BoxState::Running => "running",
            BoxState::Error => "error",
        }
    }
}

/// A holder of the box's lock, or one waiting for it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BoxHolder {
    /// A person (taking over) rather than a task.
    #[serde(default)]
    pub person: bool,
    /// The task (for a person: the task they took over for, if any).
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    /// When it took the lock (or joined the queue).
    pub since_ms: i64,
}

/// What a [`EventBody::BoxLock`] records.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BoxLockAction {
    Acquired,
    Queued,
    Released,
}

/// `POST /api/box/takeover`: a person takes the screen and browser (for `task`: the one
/// that asked for help; default: the task holding the lock, if any) until they hand back.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BoxTakeover {
    #[serde(default)]
    pub task: Option<String>,
}
