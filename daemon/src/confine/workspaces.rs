//! The workspaces a confined agent may not have: one that contains the LazyBoy home (the
//! home, or a directory above it), or the person's home directory itself (or a directory
//! above it). The sandbox grants the workspace, and cutting the LazyBoy home back out of a
//! workspace around it leaves the agent in a maze of siblings; the person's home holds their
//! shell's startup files, keys and every other project. Checked when an agent is created or
//! edited, when a task is created, and again when a task starts (a symlink may have moved,
//! an agent may predate the rule); `off` agents run as the person and are not checked.

use std::path::{Path, PathBuf};

use lazyboy_protocol::Sandbox;

/// Why `workspace` cannot be the workspace of an agent whose sandbox is `sandbox`, naming
/// both paths; `None` when it can.
pub fn refusal(sandbox: Sandbox, workspace: &Path) -> Option<String> {
    let person = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    refusal_for(sandbox, workspace, &super::home(), person.as_deref())
}

/// [`refusal`] with the homes given (`lazyboy` may be empty: unknown).
pub fn refusal_for(
    sandbox: Sandbox,
    workspace: &Path,
    lazyboy: &Path,
    person: Option<&Path>,
) -> Option<String> {
    if sandbox == Sandbox::Off {
        return None;
    }
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let ws = canonical(workspace);
    let shown = if ws == workspace {
        ws.display().to_string()
    } else {
        format!("{} ({})", workspace.display(), ws.display())
    };
    let fix = format!(
        "give the agent a project directory (or none: <home>/workspaces/<agent>), or run it \
         unconfined with `--sandbox off` if you trust it as yourself; its sandbox is {}",
        sandbox.as_str()
    );
    if !lazyboy.as_os_str().is_empty() {
        let lazyboy = canonical(lazyboy);
        if lazyboy.starts_with(&ws) {
            return Some(format!(
                "the workspace {shown} contains the LazyBoy home {}: a confined agent may not \
                 work there; {fix}",
                lazyboy.display()
            ));
        }
    }
    let person = canonical(person?);
    if person.starts_with(&ws) {
        let what = if person == ws { "is" } else { "contains" };
        return Some(format!(
            "the workspace {shown} {what} your home directory {}: a confined agent may not \
             work there; {fix}",
            person.display()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_homes_and_what_holds_them_are_refused_and_projects_are_not() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let person = root.join("alice");
        let lazyboy = person.join(".local/share/lazyboy");
        let project = person.join("src/app");
        for dir in [&lazyboy, &project] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let refuse = |ws: &Path| refusal_for(Sandbox::WorkspaceWrite, ws, &lazyboy, Some(&person));
        for ws in [&lazyboy, &person.join(".local"), &person, &root] {
            let why = refuse(ws).unwrap_or_else(|| panic!("{} allowed", ws.display()));
            assert!(why.contains(&ws.display().to_string()), "{why}");
        }
        assert!(refuse(&person).unwrap().contains("LazyBoy home"));
        assert!(refuse(&project).is_none());
        assert!(refuse(&lazyboy.join("workspaces/a")).is_none());
        // Without the LazyBoy home below it, the person's home is still refused by name.
        let elsewhere = root.join("lb");
        let why = refusal_for(Sandbox::ReadOnly, &person, &elsewhere, Some(&person)).unwrap();
        assert!(why.contains("is your home directory"), "{why}");
        assert!(refusal_for(Sandbox::Off, &person, &lazyboy, Some(&person)).is_none());
        // A symlink is judged by where it leads, and named as given.
        let link = root.join("link");
        std::os::unix::fs::symlink(&person, &link).unwrap();
        let why = refuse(&link).unwrap();
        assert!(why.contains(&link.display().to_string()), "{why}");
    }
}
