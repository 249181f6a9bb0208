//! `write_file`: creates or replaces a whole file, creating missing parent directories.
//! Mutating. Parents and the file are created beneath the workspace's fd (a symlink that
//! leads out is refused before anything is created); the bytes go through the opened fd.

use futures_util::future::BoxFuture;
use lazyboy_protocol::Approval;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{blocking, parse, path_error, rel, schema};
use crate::tools::workspace::PathError;
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, preview};

pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

impl ToolHandler for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create a file or replace its whole content; missing parent directories are created. \
         Use it for new files; to change part of an existing file, prefer edit_file."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "path": {"type": "string", "description": "File path, relative to the workspace."},
                "content": {"type": "string", "description": "The complete new content."},
            }),
            &["path", "content"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::WorkspaceWrite
    }

    fn preview<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: &'a Value,
    ) -> BoxFuture<'a, Option<Approval>> {
        Box::pin(async move {
            // A call that will fail (bad arguments, a path outside, a directory) asks nothing.
            let parsed: Args = serde_json::from_value(args.clone()).ok()?;
            let path = rel(ctx, &parsed.path).ok()?;
            let shown = path.shown();
            // The file's text now (`None`: a new file), or nothing to ask when the write will
            // fail (a directory, a path that leads out).
            let old = blocking(ctx, move |root| {
                Ok(match root.read(&path) {
                    Ok(bytes) => Some(Some(String::from_utf8_lossy(&bytes).into_owned())),
                    Err(PathError::NotFound(_)) => Some(None),
                    Err(_) => None,
                })
            })
            .await
            .ok()??;
            Some(preview::file_change(
                self.name(),
                &shown,
                old.as_deref(),
                &parsed.content,
                args,
            ))
        })
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let path = rel(ctx, &args.path)?;
            let shown = path.shown();
            let len = args.content.len();
            let created = blocking(ctx, move |root| {
                root.write(&path, args.content.as_bytes())
                    .map_err(|e| match e {
                        PathError::Io { shown, source } => {
                            ToolOutput::error(format!("cannot write {shown}: {source}"))
                        }
                        other => path_error(other),
                    })
            })
            .await?;
            let verb = if created { "created" } else { "replaced" };
            Ok(Handled::Output(ToolOutput::ok(format!(
                "{verb} {shown}: wrote {len} bytes"
            ))))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::{ESCAPES, call, ctx};

    #[tokio::test]
    async fn creates_parents_then_replaces() {
        let (_dir, ctx) = ctx();
        let out = call(
            &WriteFile,
            &ctx,
            json!({"path": "a/b/c.txt", "content": "héllo"}),
        )
        .await;
        assert_eq!(
            out,
            crate::tools::ToolOutput::ok("created a/b/c.txt: wrote 6 bytes")
        );
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.path().join("a/b/c.txt")).unwrap(),
            "héllo"
        );
        let out = call(
            &WriteFile,
            &ctx,
            json!({"path": "a/b/c.txt", "content": "x"}),
        )
        .await;
        assert_eq!(out.text, "replaced a/b/c.txt: wrote 1 bytes");
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.path().join("a/b/c.txt")).unwrap(),
            "x"
        );
    }

    #[tokio::test]
    async fn directory_target_is_an_error() {
        let (_dir, ctx) = ctx();
        std::fs::create_dir(ctx.workspace.path().join("d")).unwrap();
        let out = call(&WriteFile, &ctx, json!({"path": "d", "content": "x"})).await;
        assert!(
            out.is_error && out.text.contains("d is a directory"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn escapes_are_refused_and_nothing_is_written() {
        let (dir, ctx) = ctx();
        for path in ESCAPES {
            let out = call(&WriteFile, &ctx, json!({"path": path, "content": "pwned"})).await;
            assert!(
                out.is_error && out.text.contains("workspace"),
                "{path}: {}",
                out.text
            );
        }
        let outside = dir.path().join("outside");
        assert_eq!(
            std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
            "secret\n"
        );
        assert!(!outside.join("new.txt").exists());
        assert!(!dir.path().join("x").exists());
    }

    #[tokio::test]
    async fn missing_content_is_explained() {
        let (_dir, ctx) = ctx();
        let out = call(&WriteFile, &ctx, json!({"path": "a.txt"})).await;
        assert!(
            out.is_error && out.text.contains("missing field `content`"),
            "{}",
            out.text
        );
    }
}
