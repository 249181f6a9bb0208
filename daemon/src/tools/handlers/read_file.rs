//! `read_file`: a window of a text file's lines, numbered, so the model can quote and edit
//! them. Read-only. Binary files (a NUL byte in the first 8 KiB) are refused, not dumped.
//! The file is opened beneath the workspace's fd and read through that fd.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{blocking, parse, path_error, rel, schema};
use crate::tools::workspace::PathError;
use crate::tools::{
    Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond, spill,
};

const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut: minified files would otherwise fill the window with one line.
const MAX_LINE: usize = 2000;

pub struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl ToolHandler for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a text file from the workspace. Returns numbered lines (`number<TAB>line`) starting \
         at `offset` (1-based, default 1), at most `limit` lines (default 2000), and says when \
         more lines remain. Use it before editing a file; page through long files with offset."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "path": {"type": "string", "description": "File path, relative to the workspace."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based). Default 1."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show. Default 2000."},
            }),
            &["path"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let path = rel(ctx, &args.path)?;
            let shown = path.shown();
            let bytes = blocking(ctx, move |root| {
                root.read_file(&path).map_err(|e| match e {
                    PathError::NotFound(shown) => {
                        ToolOutput::error(format!("no such file: {shown}"))
                    }
                    PathError::IsDir(shown) => {
                        ToolOutput::error(format!("{shown} is a directory; use list_dir"))
                    }
                    other => path_error(other),
                })
            })
            .await?;
            if bytes[..bytes.len().min(8192)].contains(&0) {
                return Err(respond(format!(
                    "{shown} is a binary file ({} bytes); it is not shown",
                    bytes.len()
                )));
            }
            let text = String::from_utf8_lossy(&bytes);
            let offset = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            Ok(Handled::Output(ToolOutput::ok(spill::limit(
                ctx,
                window(&shown, &text, offset, limit),
            ))))
        })
    }
}

/// Lines `offset..offset+limit` of `text`, numbered, with a note on what remains.
fn window(shown: &str, text: &str, offset: usize, limit: usize) -> String {
    let total = text.lines().count();
    if total == 0 {
        return format!("{shown} is empty");
    }
    if offset > total {
        return format!("{shown} has only {total} lines; offset {offset} is past the end");
    }
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let cut = line
            .char_indices()
            .nth(MAX_LINE)
            .map_or(line, |(at, _)| &line[..at]);
        let more = if cut.len() < line.len() {
            " [... line cut]"
        } else {
            ""
        };
        out.push_str(&format!("{:>6}\t{cut}{more}\n", i + 1));
    }
    let last = (offset - 1).saturating_add(limit).min(total);
    if last < total {
        out.push_str(&format!(
            "[lines {offset}-{last} of {total}; {} more: call again with offset={}]\n",
            total - last,
            last + 1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::{ESCAPES, call, ctx};

    #[tokio::test]
    async fn reads_numbered_lines_with_offset_and_limit() {
        let (_dir, ctx) = ctx();
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(ctx.workspace.path().join("f.txt"), text).unwrap();
        let out = call(&ReadFile, &ctx, json!({"path": "f.txt"})).await;
        assert!(!out.is_error);
        assert!(
            out.text.starts_with("     1\tline 1\n     2\tline 2\n"),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("    10\tline 10\n"));
        let out = call(
            &ReadFile,
            &ctx,
            json!({"path": "f.txt", "offset": 3, "limit": 2}),
        )
        .await;
        assert_eq!(
            out.text,
            "     3\tline 3\n     4\tline 4\n[lines 3-4 of 10; 6 more: call again with offset=5]\n"
        );
    }

    #[tokio::test]
    async fn missing_directory_and_binary_are_errors() {
        let (_dir, ctx) = ctx();
        std::fs::create_dir(ctx.workspace.path().join("d")).unwrap();
        std::fs::write(ctx.workspace.path().join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        for (path, expected) in [
            ("nope.txt", "no such file: nope.txt"),
            ("d", "d is a directory; use list_dir"),
            ("b.bin", "b.bin is a binary file (4 bytes)"),
        ] {
            let out = call(&ReadFile, &ctx, json!({"path": path})).await;
            assert!(out.is_error, "{path}");
            assert!(out.text.contains(expected), "{}", out.text);
        }
    }

    #[tokio::test]
    async fn escapes_are_refused() {
        let (_dir, ctx) = ctx();
        for path in ESCAPES {
            let out = call(&ReadFile, &ctx, json!({"path": path})).await;
            assert!(
                out.is_error && out.text.contains("workspace"),
                "{path}: {}",
                out.text
            );
            assert!(!out.text.contains("secret\n"));
        }
    }

    #[tokio::test]
    async fn wrong_types_are_explained() {
        let (_dir, ctx) = ctx();
        let out = call(&ReadFile, &ctx, json!({"path": 3})).await;
        assert!(
            out.is_error && out.text.contains("invalid type"),
            "{}",
            out.text
        );
    }
}
