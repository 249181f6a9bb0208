//! Large results spill to `<workspace>/.lazyboy-output/`, so one tool call cannot flood the
//! model's context.
//!
//! A result over [`LIMIT`] bytes is written whole to `.lazyboy-output/<call_id>.txt`; the
//! model gets about [`HEAD`] bytes from the start, a line naming the file, and about [`TAIL`]
//! bytes from the end. Cuts fall on char boundaries, and on line boundaries when one is near.
//! Command logs live in the same directory (`<command id>.log`), see [`super::commands`].
//! The file is written through the checked directory's fd, replacing whatever had its name
//! (a planted symlink is removed, never followed): see [`super::workspace::OutputDir`].

use super::ToolContext;
pub use super::workspace::OUTPUT_DIR;

/// Results up to this size go to the model unchanged.
pub const LIMIT: usize = 16 * 1024;
/// About this many bytes of a long result's start are kept.
pub const HEAD: usize = 4 * 1024;
/// About this many bytes of a long result's end are kept.
pub const TAIL: usize = 4 * 1024;
/// Returns `text` unchanged when small; otherwise saves it whole and returns head + note + tail.
pub fn limit(ctx: &ToolContext, text: String) -> String {
    if text.len() <= LIMIT {
        return text;
    }
    let name = format!("{}.txt", file_stem(&ctx.call_id));
    let saved = ctx
        .workspace
        .output()
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            dir.replace(&name, text.as_bytes())
                .map_err(|e| e.to_string())
        });
    let (head, tail) = cut(&text);
    let omitted = text.len() - head.len() - tail.len();
    let note = match saved {
        Ok(()) => format!(
            "[... {omitted} bytes omitted; the whole output is in {OUTPUT_DIR}/{name} (read it \
             with read_file offset/limit or search it) ...]"
        ),
        Err(error) => {
            tracing::warn!(%error, call_id = %ctx.call_id, "could not save a long tool result");
            format!(
                "[... {omitted} bytes omitted; the whole output could not be saved: {error} ...]"
            )
        }
    };
    let head_nl = if head.ends_with('\n') { "" } else { "\n" };
    let tail_nl = if tail.starts_with('\n') { "" } else { "\n" };
    format!("{head}{head_nl}{note}{tail_nl}{tail}")
}

/// The head and tail of a long `text`, cut on char boundaries and, when one lies in the last
/// (first) quarter of the window, just after (before) a newline.
fn cut(text: &str) -> (&str, &str) {
    let mut head_end = floor_boundary(text, HEAD);
    if let Some(nl) = text[..head_end].rfind('\n')
        && nl + 1 >= head_end.saturating_sub(HEAD / 4)
    {
        head_end = nl + 1;
    }
    let mut tail_start = ceil_boundary(text, text.len().saturating_sub(TAIL).max(head_end));
    if let Some(nl) = text[tail_start..].find('\n')
        && nl < TAIL / 4
        && tail_start + nl + 1 < text.len()
    {
        tail_start += nl + 1;
    }
    (&text[..head_end], &text[tail_start..])
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Call ids come from the model provider: keep them to a safe file name.
fn file_stem(call_id: &str) -> String {
    let stem: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if stem.is_empty() {
        "output".to_owned()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing;

    #[test]
    fn small_text_is_unchanged() {
        let (_dir, ctx) = testing::ctx();
        assert_eq!(limit(&ctx, "hello".to_owned()), "hello");
        assert!(!ctx.workspace.path().join(OUTPUT_DIR).exists());
    }

    #[test]
    fn long_text_spills_whole_and_keeps_head_and_tail() {
        let (_dir, ctx) = testing::ctx();
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let out = limit(&ctx, text.clone());
        assert!(out.len() < HEAD + TAIL + 300, "{}", out.len());
        assert!(out.starts_with("line 0\nline 1\n"));
        assert!(out.ends_with("line 4999\n"));
        let file = format!("{OUTPUT_DIR}/{}.txt", ctx.call_id);
        assert!(
            out.contains(&format!("the whole output is in {file}")),
            "{out}"
        );
        assert!(out.contains(" bytes omitted"));
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.path().join(file)).unwrap(),
            text
        );
        // Cut after a newline: no half line around the note.
        let note_line = out.lines().find(|l| l.starts_with("[...")).unwrap();
        assert!(note_line.ends_with("...]"));
    }

    #[test]
    fn cuts_fall_on_char_boundaries() {
        let (_dir, mut ctx) = testing::ctx();
        ctx.call_id = "call/../x".to_owned();
        let text = "é".repeat(LIMIT);
        let out = limit(&ctx, text);
        assert!(out.starts_with('é') && out.ends_with('é'));
        let dir = ctx.workspace.path().join(OUTPUT_DIR);
        assert!(dir.join("call____x.txt").exists());
    }
}
