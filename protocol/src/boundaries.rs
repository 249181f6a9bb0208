//! Boundaries on the wire: where an agent's host commands may write ([`Sandbox`]), what a call
//! waiting for the person's approval will do ([`Approval`], carried by a `question` event),
//! and the person's [`Decision`].
//!
//! The rules themselves (which calls need approval, what the allow list pre-approves) live in
//! the daemon; these are only the shapes every client shares.

use serde::{Deserialize, Serialize};

use crate::Effect;

/// Where an agent's host commands may write. Reads reach the whole filesystem except the
/// LazyBoy home in both confined settings.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Sandbox {
    /// Write in the task's workspace (its `.lazyboy-output` included) and the system temp
    /// dir; the default for named agents.
    #[default]
    WorkspaceWrite,
    /// Write nowhere (the file tools refuse too).
    ReadOnly,
    /// Unconfined: commands run as the person (the default for `lazyboy run`'s `default`
    /// agent in a project directory).
    Off,
}

impl Sandbox {
    pub fn as_str(self) -> &'static str {
        match self {
            Sandbox::WorkspaceWrite => "workspace-write",
            Sandbox::ReadOnly => "read-only",
            Sandbox::Off => "off",
        }
    }

    pub fn parse(text: &str) -> Option<Sandbox> {
        match text {
            "workspace-write" => Some(Sandbox::WorkspaceWrite),
            "read-only" => Some(Sandbox::ReadOnly),
            "off" => Some(Sandbox::Off),
            _ => None,
        }
    }
}

/// Whether calls with this effect can be made to wait for approval: the ones that change
/// something outside the task (reads, the task's own plan and messages, and questions to the
/// person cannot).
pub fn approvable(effect: Effect) -> bool {
    matches!(
        effect,
        Effect::Command | Effect::WorkspaceWrite | Effect::Network | Effect::Box
    )
}

/// The options of an approval question, in this order (`option` 1, 2, 3).
pub const APPROVAL_OPTIONS: [&str; 3] = [
    "Approve",
    "Deny",
    "Approve the same for the rest of this task",
];

/// What a call waiting for approval will do, exactly: the command and where, the file and
/// the change, the URL. `arguments` is what the model sent, for anything the fields miss.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Approval {
    pub tool: String,
    pub effect: Effect,
    /// One line for people: "run `cargo publish` in .", "write src/lib.rs (+3 -1)".
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's directory, relative to the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// The file a write or edit changes, relative to the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The change as a unified diff (the whole new file when it does not exist yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The call's arguments as the model sent them (JSON text).
    #[serde(default)]
    pub arguments: String,
}

impl Approval {
    /// An approval with only the tool, effect, summary and arguments set.
    pub fn new(tool: &str, effect: Effect, summary: String, arguments: String) -> Approval {
        Approval {
            tool: tool.to_owned(),
            effect,
            summary,
            command: None,
            workdir: None,
            path: None,
            diff: None,
            url: None,
            arguments,
        }
    }
}

/// The person's decision on a call waiting for approval.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it, once.
    Approve,
    /// Do not run it: the model is told "denied by the person: <reason>".
    Deny,
    /// Run it, and the same call (same command, same file, same URL) later in this task
    /// without asking.
    ApproveForTask,
}

impl Decision {
    /// The approval option (1-based) that means this decision.
    pub fn option(self) -> usize {
        match self {
            Decision::Approve => 1,
            Decision::Deny => 2,
            Decision::ApproveForTask => 3,
        }
    }

    /// The decision an option number (1-based) stands for.
    pub fn from_option(option: usize) -> Option<Decision> {
        match option {
            1 => Some(Decision::Approve),
            2 => Some(Decision::Deny),
            3 => Some(Decision::ApproveForTask),
            _ => None,
        }
    }
}

/// `POST /api/tasks/{id}/approve`: run the call the task waits on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ApproveCall {
    /// Also approve the same call for the rest of the task.
    #[serde(default)]
    pub for_task: bool,
}

/// `POST /api/tasks/{id}/deny`: do not run it; the reason goes to the model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DenyCall {
    #[serde(default)]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_names_round_trip_through_serde_and_parse() {
        for sandbox in [Sandbox::WorkspaceWrite, Sandbox::ReadOnly, Sandbox::Off] {
            let json = serde_json::to_value(sandbox).unwrap();
            assert_eq!(json, sandbox.as_str());
            assert_eq!(Sandbox::parse(sandbox.as_str()), Some(sandbox));
        }
        assert_eq!(Sandbox::parse("workspace_write"), None);
    }

    #[test]
    fn options_and_decisions_agree() {
        for decision in [Decision::Approve, Decision::Deny, Decision::ApproveForTask] {
            assert_eq!(Decision::from_option(decision.option()), Some(decision));
        }
        assert_eq!(APPROVAL_OPTIONS[Decision::Deny.option() - 1], "Deny");
        assert_eq!(Decision::from_option(4), None);
        assert!(approvable(Effect::Box) && !approvable(Effect::Read));
        assert_eq!(serde_json::to_value(Effect::Box).unwrap(), "box");
    }
}
