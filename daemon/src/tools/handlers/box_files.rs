//! Files in the box (no lock needed): `box_read_file` {path, offset?, limit?},
//! `box_write_file` {path, content}, `copy_to_box` {path, dest}, `copy_from_box` {src, path}.
//!
//! Box paths are absolute or relative to the agent's `/home/box/work/<agent>`; the box is
//! its own machine, so they are not confined further (the container is the boundary).
//! Host paths (`copy_to_box`'s `path`, `copy_from_box`'s `path`) are opened beneath the
//! workspace's fd like every host tool's (read, or written, through that fd). Effects: reading is `read`; writing in the box is
//! `command` (it changes the box as its commands do, not the host workspace);
//! `copy_from_box` writes the workspace (`workspace_write`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::box_common::{BoxTask, box_error};
use super::{blocking, parse, path_error, rel, schema};
use crate::confine::machine::Machine;
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput};

/// Lines shown by default, as `read_file`.
const DEFAULT_LIMIT: usize = 2000;
/// Largest file moved between the host and the box in one call.
const MAX_COPY: u64 = 64 << 20;

pub struct BoxReadFile(pub Arc<BoxTask>);
pub struct BoxWriteFile(pub Arc<BoxTask>);
pub struct CopyToBox(pub Arc<BoxTask>);
pub struct CopyFromBox(pub Arc<BoxTask>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToBox {
    path: String,
    dest: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FromBox {
    src: String,
    path: String,
}

fn io(what: &str, path: &str, error: &std::io::Error) -> ToolOutput {
    ToolOutput::error(format!("{what} {path} in the box: {error}"))
}

impl ToolHandler for BoxReadFile {
    fn name(&self) -> &str {
        "box_read_file"
    }

    fn description(&self) -> &str {
        "Read a text file IN THE BOX (not the host workspace: use read_file there). `path` \
         is absolute or relative to /home/box/work/<agent>. Lines are numbered; `offset` is \
         the first line (1-based), `limit` the number of lines (default 2000)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
            }),
            &["path"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Read
    }

    fn handle<'a>(&'a self, _ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: ReadArgs = parse(self, args)?;
            let live = self.0.live().await?;
            let path = self.0.path(&live, &args.path).await?;
            let machine = self.0.sandbox.machine(&live);
            let bytes = machine
                .read(Path::new(&path))
                .await
                .map_err(|e| io("cannot read", &path, &e))?;
            let text = String::from_utf8_lossy(&bytes);
            let first = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            let total = text.lines().count();
            let mut out = String::new();
            for (n, line) in text.lines().enumerate().skip(first - 1).take(limit) {
                out.push_str(&format!("{:>6}\t{line}\n", n + 1));
            }
            let shown_to = (first - 1 + limit).min(total);
            if shown_to < total {
                out.push_str(&format!(
                    "[lines {first}-{shown_to} of {total}; read on with offset {}]\n",
                    shown_to + 1
                ));
            }
            if total == 0 {
                out = format!("({path} in the box is empty)\n");
            }
            Ok(Handled::Output(ToolOutput::ok(out)))
        })
    }
}

impl ToolHandler for BoxWriteFile {
    fn name(&self) -> &str {
        "box_write_file"
    }

    fn description(&self) -> &str {
        "Write a whole file IN THE BOX (created or replaced, parent directories made). `path` \
         is absolute or relative to /home/box/work/<agent>. For the host workspace use \
         write_file."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn handle<'a>(&'a self, _ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: WriteArgs = parse(self, args)?;
            let live = self.0.live().await?;
            let path = self.0.path(&live, &args.path).await?;
            let machine = self.0.sandbox.machine(&live);
            machine
                .write(Path::new(&path), args.content.as_bytes())
                .await
                .map_err(|e| io("cannot write", &path, &e))?;
            Ok(Handled::Output(ToolOutput::ok(format!(
                "wrote {} bytes to {path} in the box",
                args.content.len()
            ))))
        })
    }
}

impl ToolHandler for CopyToBox {
    fn name(&self) -> &str {
        "copy_to_box"
    }

    fn description(&self) -> &str {
        "Copy a file from the host workspace (`path`, relative to the workspace) into the box \
         (`dest`: absolute, or relative to /home/box/work/<agent>). The box never sees the \
         workspace otherwise."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"path": {"type": "string"}, "dest": {"type": "string"}}),
            &["path", "dest"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Command
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: ToBox = parse(self, args)?;
            let source = rel(ctx, &args.path)?;
            let shown = source.shown();
            // One open: the size checked is the size of the file read.
            let bytes = blocking(ctx, move |root| {
                use std::io::Read;
                let (file, size) = root.open_file(&source).map_err(path_error)?;
                if size > MAX_COPY {
                    return Err(ToolOutput::error(format!(
                        "{} is {size} bytes; copy_to_box moves at most {MAX_COPY}",
                        source.shown()
                    )));
                }
                let mut bytes = Vec::new();
                file.take(MAX_COPY + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| {
                        ToolOutput::error(format!(
                            "cannot read {} in the workspace: {e}",
                            source.shown()
                        ))
                    })?;
                Ok(bytes)
            })
            .await?;
            let live = self.0.live().await?;
            let dest = self.0.path(&live, &args.dest).await?;
            self.0
                .sandbox
                .machine(&live)
                .write(Path::new(&dest), &bytes)
                .await
                .map_err(|e| io("cannot write", &dest, &e))?;
            Ok(Handled::Output(ToolOutput::ok(format!(
                "copied {shown} ({} bytes) to {dest} in the box",
                bytes.len()
            ))))
        })
    }
}

impl ToolHandler for CopyFromBox {
    fn name(&self) -> &str {
        "copy_from_box"
    }

    fn description(&self) -> &str {
        "Copy a file from the box (`src`: absolute, or relative to /home/box/work/<agent>) \
         into the host workspace (`path`, relative to the workspace; created or replaced)."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({"src": {"type": "string"}, "path": {"type": "string"}}),
            &["src", "path"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::WorkspaceWrite
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: FromBox = parse(self, args)?;
            let target = rel(ctx, &args.path)?;
            let shown = target.shown();
            let live = self.0.live().await?;
            let src = self.0.path(&live, &args.src).await?;
            let size = self
                .0
                .sandbox
                .run(
                    &live,
                    "box",
                    &["stat", "-c", "%s", "--", &src],
                    None,
                    Duration::from_secs(20),
                )
                .await
                .map_err(box_error)?;
            let size: u64 = String::from_utf8_lossy(&size).trim().parse().unwrap_or(0);
            if size > MAX_COPY {
                return Err(ToolOutput::error(format!(
                    "{src} is {size} bytes; copy_from_box moves at most {MAX_COPY}"
                ))
                .into());
            }
            let bytes = self
                .0
                .sandbox
                .machine(&live)
                .read(Path::new(&src))
                .await
                .map_err(|e| io("cannot read", &src, &e))?;
            let len = bytes.len();
            blocking(ctx, move |root| {
                root.write(&target, &bytes).map_err(path_error)
            })
            .await?;
            Ok(Handled::Output(ToolOutput::ok(format!(
                "copied {src} from the box to {shown} ({len} bytes)"
            ))))
        })
    }
}
