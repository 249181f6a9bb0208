//! `search`: lines matching a literal text or a regex, under a path. Read-only.
//!
//! The walk honours `.gitignore` and `.ignore` files of the workspace (the searched
//! directory's and those of its parents up to the workspace root, as git does, even outside
//! a git repository), includes hidden files but never enters `.git` or `.lazyboy-output`,
//! and does not follow symlinks, so it stays inside the workspace. It goes through
//! directory fds: the searched path is opened beneath the workspace's fd, each entry
//! relative to its directory's fd with `O_NOFOLLOW` (an entry swapped for a symlink meanwhile
//! is skipped). The LazyBoy home, when the workspace holds it, is never entered. Binary
//! files (a NUL byte) are skipped.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{blocking, parse, path_error, rel, schema};
use crate::tools::workspace::{self, EntryKind, Kind, PathError, Rel, Root};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, spill};

const DEFAULT_MAX: usize = 200;
/// Matched lines are cut to this many chars: one minified line must not fill the result.
const MAX_LINE: usize = 300;
/// Ignore files larger than this are not read (nobody writes one by hand).
const MAX_IGNORE_FILE: u64 = 1 << 20;

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
            let path = rel(ctx, args.path.as_deref().unwrap_or("."))?;
            let shown = path.shown();
            let source = if args.regex {
                args.pattern.clone()
            } else {
                regex::escape(&args.pattern)
            };
            let regex = Regex::new(&source)
                .map_err(|e| ToolOutput::error(format!("invalid regex: {e}")))?;
            let max = args.max_results.unwrap_or(DEFAULT_MAX).max(1);
            let mut lines = blocking(ctx, move |root| find(root, &path, &regex, max)).await?;
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

/// The ignore rules of one directory: `.ignore` before `.gitignore` (it takes precedence).
struct Level(Vec<Gitignore>);

/// What a walk carries down.
struct Walk<'a> {
    root: &'a Root,
    regex: &'a Regex,
    max: usize,
    /// The ignore rules from the workspace root down to the directory being walked.
    levels: Vec<Level>,
    out: Vec<String>,
}

/// Up to `max + 1` matching lines (one more tells that the results were cut).
fn find(root: &Root, path: &Rel, regex: &Regex, max: usize) -> Result<Vec<String>, ToolOutput> {
    let missing = |e: PathError| match e {
        PathError::NotFound(shown) => {
            ToolOutput::error(format!("no such file or directory: {shown}"))
        }
        other => path_error(other),
    };
    let mut walk = Walk {
        root,
        regex,
        max,
        levels: Vec::new(),
        out: Vec::new(),
    };
    if root.kind(path).map_err(missing)? != Kind::Dir {
        let (file, _) = root.open_file(path).map_err(missing)?;
        walk.grep(file, path.path());
        return Ok(walk.out);
    }
    // The rules of the directories above the searched one, down from the workspace root.
    let mut at = PathBuf::new();
    let mut above = vec![at.clone()];
    for part in path.path().components() {
        at.push(part);
        above.push(at.clone());
    }
    above.pop();
    for dir in above {
        if let Ok(fd) = root.open_dir(&rel_of(&dir)) {
            walk.levels.push(level(fd.as_fd(), &dir));
        }
    }
    let dir = root.open_dir(path).map_err(missing)?;
    walk.dir(dir.as_fd(), path.path());
    Ok(walk.out)
}

fn rel_of(path: &Path) -> Rel {
    let mut rel = Rel::default();
    for part in path.components() {
        rel = rel.join(part.as_os_str());
    }
    rel
}

/// The ignore rules found in the directory open as `dir` (at `rel` in the workspace).
fn level(dir: BorrowedFd<'_>, rel: &Path) -> Level {
    let base = Path::new("/").join(rel);
    let mut rules = Vec::new();
    for name in [".ignore", ".gitignore"] {
        let Ok(Some(file)) = workspace::open_child(dir, OsStr::new(name)) else {
            continue;
        };
        let mut text = String::new();
        if file
            .take(MAX_IGNORE_FILE)
            .read_to_string(&mut text)
            .is_err()
        {
            continue;
        }
        let mut builder = GitignoreBuilder::new(&base);
        for line in text.lines() {
            let _ = builder.add_line(None, line);
        }
        if let Ok(rules_here) = builder.build() {
            rules.push(rules_here);
        }
    }
    Level(rules)
}

impl Walk<'_> {
    /// Whether the deepest rule that speaks of `rel` ignores it.
    fn ignored(&self, rel: &Path, is_dir: bool) -> bool {
        let path = Path::new("/").join(rel);
        for level in self.levels.iter().rev() {
            for rules in &level.0 {
                match rules.matched(&path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
        }
        false
    }

    fn full(&self) -> bool {
        self.out.len() > self.max
    }

    /// Searches the directory open as `dir` (at `rel`), depth first, entries sorted by name.
    fn dir(&mut self, dir: BorrowedFd<'_>, rel: &Path) {
        self.levels.push(level(dir, rel));
        let entries = workspace::entries(dir).unwrap_or_default();
        for entry in entries {
            if self.full() {
                break;
            }
            if entry.name == ".git" || entry.name == spill::OUTPUT_DIR {
                continue;
            }
            let child = rel.join(&entry.name);
            match entry.kind {
                EntryKind::Dir => {
                    if self.ignored(&child, true) {
                        continue;
                    }
                    // Swapped for a symlink since it was listed: not entered.
                    let Ok(sub) = workspace::subdir(dir, &entry.name) else {
                        continue;
                    };
                    if !self.root.is_home(sub.as_fd()) {
                        self.dir(sub.as_fd(), &child);
                    }
                }
                EntryKind::File => {
                    if self.ignored(&child, false) {
                        continue;
                    }
                    if let Ok(Some(file)) = workspace::open_child(dir, &entry.name) {
                        self.grep(file, &child);
                    }
                }
                // Symlinks are not followed; sockets and FIFOs hold no text.
                EntryKind::Symlink | EntryKind::Other => {}
            }
        }
        self.levels.pop();
    }

    /// Appends the matching lines of the open `file` (at `rel`).
    fn grep(&mut self, mut file: std::fs::File, rel: &Path) {
        let mut bytes = Vec::new();
        if file.read_to_end(&mut bytes).is_err() || bytes.contains(&0) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            if self.regex.is_match(line) {
                let cut = line
                    .char_indices()
                    .nth(MAX_LINE)
                    .map_or(line, |(at, _)| &line[..at]);
                self.out.push(format!("{}:{}: {cut}", rel.display(), i + 1));
                if self.full() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::{ESCAPES, call, ctx};

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
        files(ctx.workspace.path());
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
        files(ctx.workspace.path());
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
