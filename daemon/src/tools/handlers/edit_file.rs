//! `edit_file`: replaces one exact occurrence of a text in a file. Mutating. The text must
//! match exactly once, so an edit never lands somewhere the model did not mean. The file is
//! opened once, beneath the workspace's fd, and read and rewritten through that one fd: the
//! file edited is the file read.

use futures_util::future::BoxFuture;
use lazyboy_protocol::Approval;
use serde::Deserialize;
use serde_json::{Value, json};

use std::io::{Read, Seek, Write};

use super::{blocking, parse, path_error, rel, schema};
use crate::tools::workspace::PathError;
use crate::tools::{
    Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, preview, respond,
};

pub struct EditFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    old: String,
    new: String,
}

impl ToolHandler for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        "Replace one exact occurrence of `old` with `new` in a file. `old` must match the file \
         exactly once, whitespace and indentation included (copy it from read_file output \
         without the line numbers); add surrounding lines to make it unique."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "path": {"type": "string", "description": "File path, relative to the workspace."},
                "old": {"type": "string", "description": "The exact text to replace; must occur exactly once."},
                "new": {"type": "string", "description": "The replacement text."},
            }),
            &["path", "old", "new"],
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
            // An edit that will fail (no file, `old` not found exactly once) asks nothing.
            let parsed: Args = serde_json::from_value(args.clone()).ok()?;
            let path = rel(ctx, &parsed.path).ok()?;
            let shown = path.shown();
            let bytes = blocking(ctx, move |root| root.read(&path).map_err(path_error))
                .await
                .ok()?;
            let text = String::from_utf8(bytes).ok()?;
            if parsed.old.is_empty() || text.matches(&parsed.old).count() != 1 {
                return None;
            }
            let edited = text.replacen(&parsed.old, &parsed.new, 1);
            Some(preview::file_change(
                self.name(),
                &shown,
                Some(&text),
                &edited,
                args,
            ))
        })
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            let path = rel(ctx, &args.path)?;
            if args.old.is_empty() {
                return Err(respond("`old` is empty; give the exact text to replace"));
            }
            Ok(blocking(ctx, move |root| edit(root, &path, &args.old, &args.new)).await?)
        })
    }
}

/// Opens `path` once, finds `old` exactly once, and rewrites the same file through its fd.
fn edit(
    root: &crate::tools::workspace::Root,
    path: &crate::tools::workspace::Rel,
    old: &str,
    new: &str,
) -> Result<Handled, ToolOutput> {
    let shown = path.shown();
    let mut file = root.open_rw(path).map_err(|e| match e {
        PathError::NotFound(shown) => ToolOutput::error(format!(
            "no such file: {shown} (use write_file to create it)"
        )),
        other => path_error(other),
    })?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| ToolOutput::error(format!("cannot read {shown} as text: {e}")))?;
    let mut found = text.match_indices(old);
    let at = match (found.next(), found.count()) {
        (Some((at, _)), 0) => at,
        (None, _) => {
            return Err(ToolOutput::error(format!(
                "`old` was not found in {shown} (0 matches); read the file and copy the \
                 exact text, whitespace included"
            )));
        }
        (Some(_), more) => {
            return Err(ToolOutput::error(format!(
                "`old` matches {} times in {shown}; it must match exactly once: include \
                 more surrounding lines",
                more + 1
            )));
        }
    };
    let edited = format!("{}{new}{}", &text[..at], &text[at + old.len()..]);
    let written = file
        .rewind()
        .and_then(|()| file.set_len(0))
        .and_then(|()| file.write_all(edited.as_bytes()));
    written.map_err(|e| ToolOutput::error(format!("cannot write {shown}: {e}")))?;
    let line = text[..at].matches('\n').count() + 1;
    Ok(Handled::Output(ToolOutput::ok(format!(
        "edited {shown}: replaced 1 occurrence at line {line}"
    ))))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::{ESCAPES, call, ctx};

    #[tokio::test]
    async fn replaces_the_single_match() {
        let (_dir, ctx) = ctx();
        std::fs::write(ctx.workspace.path().join("f.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let args = json!({"path": "f.rs", "old": "fn b() {}", "new": "fn c() {}"});
        let out = call(&EditFile, &ctx, args).await;
        assert_eq!(out.text, "edited f.rs: replaced 1 occurrence at line 2");
        assert!(!out.is_error);
        let text = std::fs::read_to_string(ctx.workspace.path().join("f.rs")).unwrap();
        assert_eq!(text, "fn a() {}\nfn c() {}\n");
    }

    #[tokio::test]
    async fn zero_or_several_matches_say_how_many() {
        let (_dir, ctx) = ctx();
        std::fs::write(ctx.workspace.path().join("f.txt"), "x\nx\n").unwrap();
        let out = call(
            &EditFile,
            &ctx,
            json!({"path": "f.txt", "old": "y", "new": "z"}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("(0 matches)"),
            "{}",
            out.text
        );
        let out = call(
            &EditFile,
            &ctx,
            json!({"path": "f.txt", "old": "x", "new": "z"}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("matches 2 times"),
            "{}",
            out.text
        );
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.path().join("f.txt")).unwrap(),
            "x\nx\n"
        );
    }

    #[tokio::test]
    async fn missing_file_and_empty_old_are_errors() {
        let (_dir, ctx) = ctx();
        let out = call(
            &EditFile,
            &ctx,
            json!({"path": "no.txt", "old": "a", "new": "b"}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("no such file: no.txt"),
            "{}",
            out.text
        );
        std::fs::write(ctx.workspace.path().join("f.txt"), "x").unwrap();
        let out = call(
            &EditFile,
            &ctx,
            json!({"path": "f.txt", "old": "", "new": "b"}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("`old` is empty"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn escapes_are_refused() {
        let (dir, ctx) = ctx();
        for path in ESCAPES {
            let args = json!({"path": path, "old": "secret", "new": "pwned"});
            let out = call(&EditFile, &ctx, args).await;
            assert!(
                out.is_error && out.text.contains("workspace"),
                "{path}: {}",
                out.text
            );
        }
        let secret = std::fs::read_to_string(dir.path().join("outside/secret.txt")).unwrap();
        assert_eq!(secret, "secret\n");
    }
}
