//! `list_dir`: a directory's entries, sorted, a few levels deep. Read-only.
//!
//! `.git` is shown but never entered, `.lazyboy-output` (spills and command logs) is hidden,
//! and symlinks are shown with their target but never followed, so a listing cannot leave the
//! workspace or loop.

use std::path::Path;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{display, parse, resolve, schema};
use crate::tools::{
    Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond, spill,
};

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
            let path = resolve(ctx, args.path.as_deref().unwrap_or("."))?;
            let shown = display(ctx, &path);
            if !path.is_dir() {
                let what = if path.exists() {
                    "not a directory (use read_file)"
                } else {
                    "no such directory"
                };
                return Err(respond(format!("{shown}: {what}")));
            }
            let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
            let listed = tokio::task::spawn_blocking(move || {
                let mut out = Vec::new();
                walk(&path, "", depth, &mut out).map(|()| out)
            })
            .await;
            // The walk failed or its thread did: the model hears the same either way.
            let cannot =
                |e: &dyn std::fmt::Display| ToolOutput::error(format!("cannot list {shown}: {e}"));
            let mut entries = listed.map_err(|e| cannot(&e))?.map_err(|e| cannot(&e))?;
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

/// Appends `dir`'s entries (prefixed with `rel`) and, while `depth` > 1, their subtrees.
fn walk(dir: &Path, rel: &str, depth: usize, out: &mut Vec<String>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        if out.len() >= MAX_ENTRIES {
            return Ok(());
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == spill::OUTPUT_DIR {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let rel_name = format!("{rel}{name}");
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).unwrap_or_default();
            out.push(format!("{rel_name} -> {}", target.display()));
        } else if kind.is_dir() {
            out.push(format!("{rel_name}/"));
            // An unreadable subdirectory is still listed; only its contents are missing.
            if depth > 1 && name != ".git" {
                let _ = walk(&entry.path(), &format!("{rel_name}/"), depth - 1, out);
            }
        } else {
            out.push(rel_name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::handlers::testing::{ESCAPES, call, ctx};

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
        tree(&ctx.workspace);
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
        tree(&ctx.workspace);
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
