//! Images for the model: a tool's screenshot is a file in the task's workspace (recorded by
//! a `tool_image` event, so the log stays small); a request carries the latest few as base64
//! and leaves older ones out, so a long computer-use session does not fill the context with
//! pictures of screens that are gone.

use std::path::Path;

use base64::Engine;

use super::Message;

/// How many of the latest images a request carries.
pub const KEEP: usize = 3;

/// `messages` with the data of the latest [`KEEP`] images read from `workspace`; older images
/// (and unreadable files) have none.
pub async fn attach(messages: &[Message], workspace: &Path) -> Vec<Message> {
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
                tokio::fs::read(workspace.join(path))
                    .await
                    .ok()
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
