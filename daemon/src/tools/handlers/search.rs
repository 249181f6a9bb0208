//! `search`: lines matching a literal text or a regex, under a path. Read-only.
//!
//! The walk honours `.gitignore`/`.ignore` even outside a git repository (`require_git(false)`),
//! includes hidden files but never enters `.git` or `.lazyboy-output`, and does not follow
//! symlinks, so it stays inside the workspace. Binary files (a NUL byte) are skipped.

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{display, parse, resolve, schema};
use crate::tools::{
    Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond, spill,
};

const DEFAULT_MAX: usize = 200;
/// Matched lines are cut to this many chars: one minified line must not fill the result.
const MAX_LINE: usize = 300;

pub struct Search;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    #[serde(default)]
    regex: bool,
    max_results: Option<usize>,
}

impl ToolHandler for Search {
    fn name(&self) -> &str {
        "search"
    }

    fn description(&self) -> &str {
        "Search file contents under a path (default: the whole workspace) and return matching \
         lines as `path:line: text`. `pattern` is literal text unless `regex` is true (Rust \
         regex syntax). Files ignored by .gitignore are skipped. At most `max_results` lines \
         (default 200)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "pattern": {"type": "string", "description": "Text to find (or a regex when `regex` is true)."},
                "path": {"type": "string", "description": "File or directory to search, relative to the workspace. Default \".\"."},
                "regex": {"type": "boolean", "description": "Treat `pattern` as a regular expression. Default false."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Most matching lines to return. Default 200."},
            }),
            &["pattern"],
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
            if !path.exists() {
                return Err(respond(format!("no such file or directory: {shown}")));
            }
            let source = if args.regex {
                args.pattern.clone()
            } else {
                regex::escape(&args.pattern)
            };
            let regex = Regex::new(&source)
                .map_err(|e| ToolOutput::error(format!("invalid regex: {e}")))?;
            let max = args.max_results.unwrap_or(DEFAULT_MAX).max(1);
            let root = ctx.workspace.clone();
            let mut lines = tokio::task::spawn_blocking(move || find(&root, &path, &regex, max))
                .await
                .map_err(|e| ToolOutput::error(format!("search failed: {e}")))?;
            if lines.is_empty() {
                return Ok(Handled::Output(ToolOutput::ok(format!(
                    "no matches for `{}` in {shown}",
                    args.pattern
                ))));
            }
            if lines.len() > max {
                lines.truncate(max);
                lines.push(format!(
                    "[stopped at {max} results; narrow the pattern or the path]"
                ));
            }
            Ok(Handled::Output(ToolOutput::ok(spill::limit(
                ctx,
                lines.join("\n") + "\n",
            ))))
        })
    }
}

/// Up to `max + 1` matching lines (one more tells that the results were cut).
fn find(root: &Path, path: &Path, regex: &Regex, max: usize) -> Vec<String> {
    let walk = ignore::WalkBuilder::new(path)
        .require_git(false)
        .hidden(false)
        .filter_entry(|entry| {
            let name = entry.file_name();
            name != ".git" && name != spill::OUTPUT_DIR
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut out = Vec::new();
    for entry in walk.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if bytes.contains(&0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let rel: PathBuf = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_path_buf();
        for (i, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                let cut = line
                    .char_indices()
                    .nth(MAX_LINE)
                    .map_or(line, |(at, _)| &line[..at]);
                out.push(format!("{}:{}: {cut}", rel.display(), i + 1));
                if out.len() > max {
                    return out;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::handlers::testing::{ESCAPES, call, ctx};

    fn files(root: &Path) {
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/a.rs"), "fn main() {}\nlet x = a.b(1);\n").unwrap();
        std::fs::write(root.join("src/b.rs"), "// main here\n").unwrap();
        std::fs::write(root.join("target/out.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("run.log"), "main\n").unwrap();
        std::fs::write(root.join("bin.dat"), b"main\0").unwrap();
    }

    #[tokio::test]
    async fn literal_search_honours_gitignore_without_git() {
        let (_dir, ctx) = ctx();
        files(&ctx.workspace);
        let out = call(&Search, &ctx, json!({"pattern": "main"})).await;
        assert_eq!(
            out.text,
            "src/a.rs:1: fn main() {}\nsrc/b.rs:1: // main here\n"
        );
        let out = call(&Search, &ctx, json!({"pattern": "a.b(1)"})).await;
        assert_eq!(out.text, "src/a.rs:2: let x = a.b(1);\n");
        let out = call(
            &Search,
            &ctx,
            json!({"pattern": "main", "path": "src/b.rs"}),
        )
        .await;
        assert_eq!(out.text, "src/b.rs:1: // main here\n");
    }

    #[tokio::test]
    async fn regex_max_results_and_no_match() {
        let (_dir, ctx) = ctx();
        files(&ctx.workspace);
        let out = call(&Search, &ctx, json!({"pattern": "^fn \\w+", "regex": true})).await;
        assert_eq!(out.text, "src/a.rs:1: fn main() {}\n");
        let out = call(&Search, &ctx, json!({"pattern": "main", "max_results": 1})).await;
        assert!(
            out.text
                .starts_with("src/a.rs:1: fn main() {}\n[stopped at 1 results")
        );
        let out = call(&Search, &ctx, json!({"pattern": "zzz"})).await;
        assert_eq!(out, ToolOutput::ok("no matches for `zzz` in ."));
    }

    #[tokio::test]
    async fn invalid_regex_and_escapes_are_errors() {
        let (_dir, ctx) = ctx();
        let out = call(&Search, &ctx, json!({"pattern": "(", "regex": true})).await;
        assert!(
            out.is_error && out.text.contains("invalid regex"),
            "{}",
            out.text
        );
        for path in ESCAPES.into_iter().chain(["out"]) {
            let out = call(&Search, &ctx, json!({"pattern": "secret", "path": path})).await;
            assert!(
                out.is_error && out.text.contains("workspace"),
                "{path}: {}",
                out.text
            );
        }
        // The symlink to the outside is not followed by a workspace-wide search either.
        let out = call(&Search, &ctx, json!({"pattern": "secret"})).await;
        assert!(out.text.starts_with("no matches"), "{}", out.text);
    }
}
