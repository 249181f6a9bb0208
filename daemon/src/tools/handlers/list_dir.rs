//! `list_dir`: a directory's entries, sorted, a few levels deep. Read-only.
//!
//! `.git` is shown but never entered, `.lazyboy-output` (spills and command logs) is hidden,
//! and symlinks are shown with their target but never followed, so a listing cannot leave the
//! workspace or loop. The walk goes through directory fds: the listed directory is opened
//! beneath the workspace's fd, each subdirectory relative to its parent's fd with
//! `O_NOFOLLOW` (one swapped for a symlink meanwhile is not entered). The LazyBoy home, when
//! the workspace holds it, is named but never entered.

use std::os::fd::{AsFd, BorrowedFd};

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{blocking, parse, path_error, rel, schema};
use crate::tools::workspace::{self, EntryKind, PathError, Root};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, spill};

const MAX_DEPTH: usize = 3;
/// Stops a listing of a huge tree early; spill handles the rest of the size problem.
const MAX_ENTRIES: usize = 5000;

pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

impl ToolHandler for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "List a directory of the workspace: sorted entries, directories with a trailing `/`, \
         symlinks as `name -> target`. `path` defaults to the workspace root (\".\"); `depth` \
         (default 1, at most 3) also lists subdirectories. `.git` is not entered."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "path": {"type": "string", "description": "Directory, relative to the workspace. Default \".\"."},
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels to list. Default 1."},
            }),
            &[],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let path = rel(ctx, args.path.as_deref().unwrap_or("."))?;
            let shown = path.shown();
            let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
            let mut entries = blocking(ctx, move |root| {
                let dir = root.open_dir(&path).map_err(|e| match e {
                    PathError::NotFound(shown) => {
                        ToolOutput::error(format!("{shown}: no such directory"))
                    }
                    PathError::NotDir(shown) => {
                        ToolOutput::error(format!("{shown}: not a directory (use read_file)"))
                    }
                    other => path_error(other),
                })?;
                let mut out = Vec::new();
                walk(root, dir.as_fd(), "", depth, &mut out)
                    .map_err(|e| ToolOutput::error(format!("cannot list {}: {e}", path.shown())))?;
                Ok(out)
            })
            .await?;
            if entries.is_empty() {
                return Ok(Handled::Output(ToolOutput::ok(format!("{shown} is empty"))));
            }
            if entries.len() >= MAX_ENTRIES {
                entries.push(format!(
                    "[stopped at {MAX_ENTRIES} entries; list a subdirectory]"
                ));
            }
            Ok(Handled::Output(ToolOutput::ok(spill::limit(
                ctx,
                entries.join("\n") + "\n",
            ))))
        })
    }
}

/// Appends the entries of `dir` (open; prefixed with `rel`) and, while `depth` > 1, their
/// subtrees, each opened relative to its parent without following a symlink.
fn walk(
    root: &Root,
    dir: BorrowedFd<'_>,
    rel: &str,
    depth: usize,
    out: &mut Vec<String>,
) -> std::io::Result<()> {
    for entry in workspace::entries(dir)? {
        if out.len() >= MAX_ENTRIES {
            return Ok(());
        }
        let name = entry.name.to_string_lossy().into_owned();
        if name == spill::OUTPUT_DIR {
            continue;
        }
        let rel_name = format!("{rel}{name}");
        match entry.kind {
            EntryKind::Symlink => {
                let target = workspace::read_link(dir, &entry.name).unwrap_or_default();
                out.push(format!("{rel_name} -> {}", target.display()));
            }
            EntryKind::Dir => {
                // An unreadable subdirectory (or one swapped for a symlink since it was
                // listed) is still named; only its contents are missing.
                let sub = if depth > 1 && name != ".git" {
                    workspace::subdir(dir, &entry.name).ok()
                } else {
                    None
                };
                match sub {
                    Some(sub) if root.is_home(sub.as_fd()) => {
                        out.push(format!("{rel_name}/ (the LazyBoy home: not listed)"));
                    }
                    Some(sub) => {
                        out.push(format!("{rel_name}/"));
                        let _ = walk(root, sub.as_fd(), &format!("{rel_name}/"), depth - 1, out);
                    }
                    None => out.push(format!("{rel_name}/")),
                }
            }
            EntryKind::File | EntryKind::Other => out.push(rel_name),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::tools::testing::{ESCAPES, call, ctx};

    fn tree(root: &Path) {
        for dir in ["src/deep/deeper", ".git/objects", ".lazyboy-output"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "b.txt",
            "a.txt",
            "src/main.rs",
            "src/deep/x.rs",
            ".git/HEAD",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
    }

    #[tokio::test]
    async fn lists_sorted_with_depth() {
        let (_dir, ctx) = ctx();
        tree(ctx.workspace.path());
        let out = call(&ListDir, &ctx, json!({})).await;
        assert!(!out.is_error);
        assert!(
            out.text.starts_with(".git/\na.txt\nb.txt\nout -> "),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("src/\n"), "{}", out.text);
        let out = call(&ListDir, &ctx, json!({"path": "src", "depth": 2})).await;
        assert_eq!(out.text, "deep/\ndeep/deeper/\ndeep/x.rs\nmain.rs\n");
        let out = call(&ListDir, &ctx, json!({"depth": 9})).await;
        assert!(out.text.contains("src/deep/deeper/\n") && !out.text.contains(".git/HEAD"));
        assert!(!out.text.contains("lazyboy-output"), "{}", out.text);
    }

    #[tokio::test]
    async fn files_missing_paths_and_empty_dirs() {
        let (_dir, ctx) = ctx();
        tree(ctx.workspace.path());
        let out = call(&ListDir, &ctx, json!({"path": "a.txt"})).await;
        assert!(
            out.is_error && out.text.contains("not a directory"),
            "{}",
            out.text
        );
        let out = call(&ListDir, &ctx, json!({"path": "nope"})).await;
        assert!(
            out.is_error && out.text.contains("no such directory"),
            "{}",
            out.text
        );
        let out = call(&ListDir, &ctx, json!({"path": "src/deep/deeper"})).await;
        assert_eq!(out, ToolOutput::ok("src/deep/deeper is empty"));
    }

    #[tokio::test]
    async fn escapes_are_refused() {
        let (_dir, ctx) = ctx();
        for path in ESCAPES.into_iter().chain(["out", "/"]) {
            let out = call(&ListDir, &ctx, json!({"path": path})).await;
            assert!(
                out.is_error && out.text.contains("workspace"),
                "{path}: {}",
                out.text
            );
        }
    }
}
