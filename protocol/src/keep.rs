//! Keeping a person's work (issue 23): backups and their manifest, retention's passes and the
//! stub a removed tool output leaves, and a task's export.

use serde::{Deserialize, Serialize};

use crate::{PlanStep, Task, ToolStatus, Usage, Verdict};

/// The format of a backup archive's `manifest.json` this build writes and reads.
pub const BACKUP_FORMAT: u32 = 1;
/// The name of the manifest inside a backup archive (its first entry).
pub const MANIFEST: &str = "manifest.json";

/// `POST /api/backup` (socket and TCP, with the token): make a backup now.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackupRequest {
    /// An absolute file to write (default `<home>/backups/lazyboy-<time>.tar.gz`).
    #[serde(default)]
    pub path: Option<String>,
    /// Also the secrets that are files (the token; a VAPID key when there is one).
    #[serde(default)]
    pub with_secrets: bool,
}

/// The answer to [`BackupRequest`]: where the archive is and what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupMade {
    pub path: String,
    /// The archive's size.
    pub bytes: u64,
    pub took_ms: u64,
    pub manifest: BackupManifest,
}

/// `manifest.json`: what a backup is and how to check it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupManifest {
    /// [`BACKUP_FORMAT`].
    pub format: u32,
    /// The daemon that wrote it.
    pub version: String,
    /// The database's newest applied migration: a restore by a build that knows less is
    /// refused.
    pub schema_version: i64,
    pub created_at_ms: i64,
    pub with_secrets: bool,
    pub counts: BackupCounts,
    /// Every other entry of the archive, with its size and SHA-256.
    pub files: Vec<BackupFile>,
}

/// What the backed-up database held.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupCounts {
    pub events: i64,
    pub last_seq: i64,
    pub agents: i64,
    pub tasks: i64,
    pub memories: i64,
    pub schedules: i64,
}

/// One entry of a backup archive.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupFile {
    /// Its name in the archive and in the home (`lazyboy.db`, `config.toml`, `token`).
    pub name: String,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// `POST /api/retention/run`: one retention pass now.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RetentionRequest {
    /// Count what would be freed; change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Overrides `[retention] tool_output_days` for this pass.
    #[serde(default)]
    pub days: Option<u32>,
}

/// What a retention pass did (or, dry, would do).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RetentionReport {
    pub dry_run: bool,
    pub days: u32,
    /// Tool results whose bodies were (or would be) replaced by a stub.
    pub results: u64,
    /// Tasks they belong to.
    pub tasks: u64,
    /// Their stored size before and after.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// The database on disk before and after (equal on a dry run).
    pub file_bytes_before: u64,
    pub file_bytes_after: u64,
    pub took_ms: u64,
}

/// The mark a stubbed tool result's `data` carries under `"removed"`: its `output` is now the
/// stub text ("(removed after 30 days: 12 KB)" and a few head and tail lines), and this
/// says what was there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RemovedOutput {
    pub days: u32,
    /// The original output's size, lines and SHA-256 (lowercase hex).
    pub bytes: u64,
    pub lines: u64,
    pub sha256: String,
    /// When the pass ran.
    pub at_ms: i64,
}

/// The format of [`TaskExport`] this build writes.
pub const EXPORT_FORMAT: u32 = 1;

/// `GET /api/tasks/{id}/export?format=json`: a task as a record that stands alone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskExport {
    /// [`EXPORT_FORMAT`].
    pub format: u32,
    pub exported_at_ms: i64,
    pub task: Task,
    /// The plan each time it changed.
    pub plans: Vec<ExportPlan>,
    /// The conversation and the work, in the log's order.
    pub entries: Vec<ExportEntry>,
    pub verdict: Option<ExportVerdict>,
    pub deliverables: Vec<ExportFile>,
    pub usage: Usage,
    /// Spilled outputs past the export's cap: not included, named here.
    pub omitted: Vec<String>,
}

/// The plan as it stood after one `update_plan`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExportPlan {
    pub seq: i64,
    pub at_ms: i64,
    pub steps: Vec<PlanStep>,
    pub explanation: Option<String>,
}

/// How the task ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExportVerdict {
    pub verdict: Verdict,
    pub message: String,
    pub at_ms: i64,
}

/// One step of an exported task.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExportEntry {
    /// `from`: `person` (the objective, a message), `agent` (`send_message`, a reply's
    /// text) or `runtime` (a note).
    Message {
        seq: i64,
        at_ms: i64,
        from: String,
        text: String,
    },
    /// A question to the person, and their answer when one came.
    Question {
        seq: i64,
        at_ms: i64,
        call_id: String,
        question: String,
        options: Vec<String>,
        answer: Option<String>,
    },
    /// A tool call with its arguments and its result.
    ToolCall {
        seq: i64,
        at_ms: i64,
        call_id: String,
        name: String,
        arguments: String,
        status: Option<ToolStatus>,
        result: Option<String>,
        /// Set when retention replaced the result with its stub.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        removed: Option<RemovedOutput>,
        /// The whole output the result spilled to a file, up to the export's cap.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spilled: Option<ExportSpill>,
        /// Screenshots that went with the result.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ExportFile>,
    },
}

/// A spilled output read back from the workspace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExportSpill {
    pub path: String,
    pub bytes: u64,
    /// The file's text (lossy UTF-8), whole unless `truncated`.
    pub text: String,
    pub truncated: bool,
}

/// A file of the task (a deliverable, a screenshot), as it is on disk at export time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExportFile {
    pub path: String,
    pub bytes: u64,
    /// `None` when the file is gone (`missing` says why).
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}
