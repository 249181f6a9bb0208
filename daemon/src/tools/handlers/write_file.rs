//! `write_file`: creates or replaces a whole file, creating missing parent directories.
//! Mutating. The target is resolved inside the workspace before anything is created.

use futures_util::future::BoxFuture;
use lazyboy_protocol::Approval;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{display, parse, resolve, schema};
use crate::tools::{
    Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, preview, respond,
};

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
            let path = resolve(ctx, &parsed.path).ok()?;
            if path.is_dir() {
                return None;
            }
            let old = tokio::fs::read_to_string(&path).await.ok();
            let shown = display(ctx, &path);
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
            let path = resolve(ctx, &args.path)?;
            let shown = display(ctx, &path);
            if path.is_dir() {
                return Err(respond(format!("{shown} is a directory")));
            }
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await.map_err(|e| {
                    ToolOutput::error(format!("cannot create the directories for {shown}: {e}"))
                })?;
            }
            let existed = path.exists();
            tokio::fs::write(&path, args.content.as_bytes())
                .await
                .map_err(|e| ToolOutput::error(format!("cannot write {shown}: {e}")))?;
            if !existed {
                // Created under the daemon's umask 077: give it the person's usual mode.
                use std::os::unix::fs::PermissionsExt;
                let mode = 0o666 & !crate::tools::user_umask();
                let _ =
                    tokio::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).await;
            }
            let verb = if existed { "replaced" } else { "created" };
            Ok(Handled::Output(ToolOutput::ok(format!(
                "{verb} {shown}: wrote {} bytes",
                args.content.len()
            ))))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::handlers::testing::{ESCAPES, call, ctx};

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
            std::fs::read_to_string(ctx.workspace.join("a/b/c.txt")).unwrap(),
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
            std::fs::read_to_string(ctx.workspace.join("a/b/c.txt")).unwrap(),
            "x"
        );
    }

    #[tokio::test]
    async fn directory_target_is_an_error() {
        let (_dir, ctx) = ctx();
        std::fs::create_dir(ctx.workspace.join("d")).unwrap();
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
