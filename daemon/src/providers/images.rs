//! Images for the model: a tool's screenshot is a file in the task's workspace (recorded by
//! a `tool_image` event, so the log stays small); a request carries the latest few as base64
//! and leaves older ones out, so a long computer-use session does not fill the context with
//! pictures of screens that are gone.
//!
//! An image is read back through the workspace's checked `.lazyboy-output` fd, by its plain
//! file name, with `O_NOFOLLOW` and only as a regular file: a command that replaced a
//! screenshot with a symlink (to `<home>/token`, say) gets nothing sent.

use base64::Engine;

use super::Message;
use crate::tools::workspace::{OUTPUT_DIR, Root};

/// How many of the latest images a request carries.
pub const KEEP: usize = 3;

/// `messages` with the data of the latest [`KEEP`] images read from `workspace`; older images
/// (and unreadable files) have none.
pub async fn attach(messages: &[Message], workspace: &Root) -> Vec<Message> {
    let total = messages
        .iter()
        .filter(|m| matches!(m, Message::Image { .. }))
        .count();
    let mut seen = 0;
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        if let Message::Image {
            call_id,
            media_type,
            path,
            ..
        } = message
        {
            seen += 1;
            let data = if seen + KEEP > total {
                read(workspace, path)
                    .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                None
            };
            out.push(Message::Image {
                call_id: call_id.clone(),
                media_type: media_type.clone(),
                path: path.clone(),
                data,
            });
        } else {
            out.push(message.clone());
        }
    }
    out
}

/// A recorded image (`.lazyboy-output/<name>`), read as the module doc says.
fn read(workspace: &Root, path: &str) -> Option<Vec<u8>> {
    let name = path.strip_prefix(OUTPUT_DIR)?.strip_prefix('/')?;
    workspace.output().ok()?.read(name).ok()
}
