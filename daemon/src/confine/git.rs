//! Which git directories a `workspace-write` command must not change: the ones git reads
//! programs from (`config`: `core.fsmonitor`, `core.pager`, filters, aliases...; `hooks/`),
//! or another repository's location (`commondir`, a worktree's `gitdir`), or submodules'
//! (`modules/`, gitlinks staged in the index). Every one of those files lies in the git
//! directory, and a file created there later (a `commondir`, a hook) would count as much as
//! one changed, so the whole directory is protected, as Codex keeps `.git` read-only: the
//! agent's commands read the repository (`git status`, `diff`, `log`) but cannot commit
//! unless the agent is allowed to (`git_write`, per agent).
//!
//! Found from the filesystem at each command's start, cheaply (a few `stat`s and one listing
//! of the workspace): the workspace's own `.git`, those of its immediate subdirectories (a
//! workspace holding several projects), and that of the repository enclosing the workspace;
//! for a `.git` file (a worktree or submodule checkout), the git directory it names and that
//! one's `commondir`. Only paths a command could write (under a write root) are listed.
//!
//! Not covered (the docs say so): a repository deeper in the workspace, one the agent makes
//! itself, a `.git` that is a symbolic link (a link can be replaced, a mount cannot be put on
//! one), and repositories elsewhere under the temp dir.

use std::path::{Path, PathBuf};

/// The git directories to make read-only for a command of a task in `workspace` that may
/// write under `write_roots`.
pub fn protected(workspace: &Path, write_roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut candidates = vec![workspace.join(".git")];
    if let Ok(entries) = std::fs::read_dir(workspace) {
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) && entry.file_name() != ".git" {
                candidates.push(entry.path().join(".git"));
            }
        }
    }
    if let Some(enclosing) = workspace
        .ancestors()
        .skip(1)
        .map(|dir| dir.join(".git"))
        .find(|git| git.symlink_metadata().is_ok())
    {
        candidates.push(enclosing);
    }
    let writable = |path: &Path| write_roots.iter().any(|root| path.starts_with(root));
    let mut out = Vec::new();
    for git in candidates {
        let Ok(meta) = git.symlink_metadata() else {
            continue;
        };
        if meta.is_file() {
            out.extend(linked(&git));
        }
        if meta.is_dir() || meta.is_file() {
            out.push(git);
        }
    }
    out.retain(|path| writable(path));
    out.sort();
    out.dedup();
    out
}

/// For a `.git` file (`gitdir: PATH`): the git directory it names, and that directory's
/// common directory (`commondir`, a worktree's main repository) when it has one.
fn linked(file: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(gitdir) = pointer(file, "gitdir:") else {
        return out;
    };
    if let Some(common) = pointer(&gitdir.join("commondir"), "") {
        out.push(common);
    }
    out.push(gitdir);
    out.retain(|dir| dir.is_dir());
    out
}

/// The path a one-line pointer file names after `prefix`, resolved against the file's
/// directory when relative, canonical.
fn pointer(file: &Path, prefix: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let named = text.lines().next()?.strip_prefix(prefix)?.trim();
    if named.is_empty() {
        return None;
    }
    file.parent()?.join(named).canonicalize().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspaces_repositories_and_the_enclosing_one_are_found() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let outer = root.join("outer");
        let ws = outer.join("ws");
        for dir in [
            ".git",
            "ws/.git",
            "ws/app/.git",
            "ws/lib",
            "ws/deep/er/.git",
        ] {
            std::fs::create_dir_all(outer.join(dir)).unwrap();
        }
        // A worktree checkout: `.git` is a file naming the main repository's worktree dir.
        let main = root.join("main/.git");
        std::fs::create_dir_all(main.join("worktrees/wt")).unwrap();
        std::fs::write(main.join("worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(ws.join("wt")).unwrap();
        std::fs::write(
            ws.join("wt/.git"),
            format!("gitdir: {}\n", main.join("worktrees/wt").display()),
        )
        .unwrap();
        let all = protected(&ws, std::slice::from_ref(&root));
        let expected: Vec<PathBuf> = [
            main.clone(),
            main.join("worktrees/wt"),
            outer.join(".git"),
            ws.join(".git"),
            ws.join("app/.git"),
            ws.join("wt/.git"),
        ]
        .into_iter()
        .collect();
        let mut expected = expected;
        expected.sort();
        assert_eq!(all, expected);
        // Only what a command could write: the workspace alone as the write root.
        let inside = protected(&ws, std::slice::from_ref(&ws));
        assert_eq!(
            inside,
            [ws.join(".git"), ws.join("app/.git"), ws.join("wt/.git")]
        );
    }

    #[test]
    fn no_repository_means_nothing_to_protect() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        assert!(protected(&ws, std::slice::from_ref(&ws)).is_empty());
    }
}
