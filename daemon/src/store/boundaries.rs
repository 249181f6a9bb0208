//! An agent's boundaries (issue 13) as the store keeps them: the effects whose calls wait
//! for the person's approval, the `exec_command` rules that need none, and the sandbox
//! (with whether its commands may change git directories, issue 21).

use lazyboy_protocol::{Effect, Sandbox};

/// An agent's boundaries as stored: the effects that need approval and the allow rules as
/// JSON lists, the sandbox by name (`None`: the default, see [`Boundaries::sandbox`]).
#[derive(Debug, Clone, sqlx::FromRow, PartialEq, Eq)]
pub struct Boundaries {
    pub approve: String,
    pub allow: String,
    pub sandbox: Option<String>,
    /// `workspace-write` commands may change the repositories' git directories.
    pub git_write: bool,
}

impl Default for Boundaries {
    fn default() -> Boundaries {
        Boundaries {
            approve: "[]".to_owned(),
            allow: "[]".to_owned(),
            sandbox: None,
            git_write: false,
        }
    }
}

/// A change to an agent's boundaries: the `Some` parts replace what is stored.
#[derive(Debug, Clone, Default)]
pub struct BoundaryChange {
    pub approve: Option<Vec<Effect>>,
    pub allow: Option<Vec<String>>,
    pub sandbox: Option<Sandbox>,
    pub git_write: Option<bool>,
}

impl Boundaries {
    /// Applies `change` (what it leaves out stays).
    pub fn with(mut self, change: &BoundaryChange) -> Boundaries {
        if let Some(approve) = &change.approve {
            self.approve =
                serde_json::Value::from(approve.iter().map(|e| e.as_str()).collect::<Vec<_>>())
                    .to_string();
        }
        if let Some(allow) = &change.allow {
            self.allow = serde_json::Value::from(allow.clone()).to_string();
        }
        if let Some(sandbox) = change.sandbox {
            self.sandbox = Some(sandbox.as_str().to_owned());
        }
        if let Some(git_write) = change.git_write {
            self.git_write = git_write;
        }
        self
    }

    /// The effects whose calls wait for approval (unknown names are dropped).
    pub fn approve(&self) -> Vec<Effect> {
        serde_json::from_str::<Vec<serde_json::Value>>(&self.approve)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect()
    }

    /// The `exec_command` rules that need no approval.
    pub fn allow(&self) -> Vec<String> {
        serde_json::from_str(&self.allow).unwrap_or_default()
    }

    /// The sandbox in force for `agent`: the stored one, else `workspace-write` for every
    /// agent, the `default` one (what `lazyboy run` uses in a project directory) included.
    /// An unconfined agent can read the home's token and use the API as the person, so
    /// running unconfined is something the person chooses (`--sandbox off`), never a
    /// default. (Until 0.1.0 the `default` agent ran unconfined when nothing was stored; an
    /// upgraded home gets the new default too, having stored nothing.)
    pub fn sandbox(&self, _agent: &str) -> Sandbox {
        self.sandbox
            .as_deref()
            .and_then(Sandbox::parse)
            .unwrap_or(Sandbox::WorkspaceWrite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_change_only_what_is_given_and_parse_leniently() {
        let stored = Boundaries::default().with(&BoundaryChange {
            approve: Some(vec![Effect::Command, Effect::WorkspaceWrite]),
            allow: Some(vec!["git status".into()]),
            sandbox: None,
            git_write: None,
        });
        assert_eq!(stored.approve, r#"["command","workspace_write"]"#);
        assert_eq!(stored.approve(), [Effect::Command, Effect::WorkspaceWrite]);
        assert_eq!(stored.allow(), ["git status"]);
        assert_eq!(stored.sandbox("default"), Sandbox::WorkspaceWrite);
        assert_eq!(stored.sandbox("researcher"), Sandbox::WorkspaceWrite);
        let read_only = stored.clone().with(&BoundaryChange {
            sandbox: Some(Sandbox::ReadOnly),
            ..BoundaryChange::default()
        });
        assert_eq!(read_only.sandbox("default"), Sandbox::ReadOnly);
        assert_eq!(read_only.approve, stored.approve);
        assert!(!read_only.git_write);
        let git = read_only.with(&BoundaryChange {
            git_write: Some(true),
            ..BoundaryChange::default()
        });
        assert!(git.git_write);
        assert_eq!(git.sandbox("x"), Sandbox::ReadOnly);
        let odd = Boundaries {
            approve: r#"["command","bogus"]"#.into(),
            allow: "not json".into(),
            sandbox: Some("nonsense".into()),
            git_write: false,
        };
        assert_eq!(odd.approve(), [Effect::Command]);
        assert!(odd.allow().is_empty());
        assert_eq!(odd.sandbox("x"), Sandbox::WorkspaceWrite);
    }
}
