//! What the person is shown when a call waits for their approval ([`Approval`]): each tool
//! may say exactly what it will do ([`super::ToolHandler::preview`]); these are the pieces
//! they share: a preview any tool gets (its arguments, with the URL or command pulled out
//! when there is one) and the unified diff of a file change.

use lazyboy_protocol::{Approval, Effect};
use serde_json::Value;

/// The longest diff a question carries; a longer one is cut, saying how much was left out.
const MAX_DIFF: usize = 64 * 1024;
/// The longest argument text shown in a summary line.
const MAX_SUMMARY_ARGS: usize = 200;

/// A preview from the arguments alone: `tool(arguments)`, with `url` and `cmd` lifted out.
pub fn generic(tool: &str, effect: Effect, args: &Value) -> Approval {
    let arguments = args.to_string();
    let url = args.get("url").and_then(Value::as_str).map(str::to_owned);
    let command = args.get("cmd").and_then(Value::as_str).map(str::to_owned);
    let summary = match (&url, &command) {
        (Some(url), _) => format!("{tool} {url}"),
        (None, Some(cmd)) => format!("{tool}: {cmd}"),
        (None, None) => format!("{tool} {}", shorten(&arguments, MAX_SUMMARY_ARGS)),
    };
    Approval {
        url,
        command,
        ..Approval::new(tool, effect, summary, arguments)
    }
}

/// A preview of writing `new` to `path` (shown relative to the workspace) over `old` (`None`:
/// the file does not exist yet, or is not text).
pub fn file_change(tool: &str, path: &str, old: Option<&str>, new: &str, args: &Value) -> Approval {
    let (added, removed) = line_counts(old.unwrap_or(""), new);
    let verb = if old.is_some() { "change" } else { "create" };
    Approval {
        path: Some(path.to_owned()),
        diff: Some(diff(path, old, new)),
        ..Approval::new(
            tool,
            Effect::WorkspaceWrite,
            format!("{verb} {path} (+{added} -{removed})"),
            args.to_string(),
        )
    }
}

/// The unified diff from `old` to `new` (three lines of context), cut at [`MAX_DIFF`].
pub fn diff(path: &str, old: Option<&str>, new: &str) -> String {
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_owned()
    };
    let text = similar::TextDiff::from_lines(old.unwrap_or(""), new)
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string();
    if text.len() <= MAX_DIFF {
        return text;
    }
    let mut cut = MAX_DIFF;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[... {} more bytes of diff not shown ...]\n",
        &text[..cut],
        text.len() - cut
    )
}

fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut counts = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => counts.0 += 1,
            similar::ChangeTag::Delete => counts.1 += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    counts
}

fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_generic_preview_lifts_out_the_url_or_command() {
        let web = generic(
            "web_fetch",
            Effect::Network,
            &json!({"url": "https://x.test/a"}),
        );
        assert_eq!(web.url.as_deref(), Some("https://x.test/a"));
        assert_eq!(web.summary, "web_fetch https://x.test/a");
        let other = generic("box_click", Effect::Box, &json!({"x": 1, "y": 2}));
        assert_eq!(other.summary, r#"box_click {"x":1,"y":2}"#);
        assert_eq!(other.effect, Effect::Box);
    }

    #[test]
    fn a_file_change_shows_a_unified_diff_and_counts() {
        let args = json!({});
        let change = file_change(
            "edit_file",
            "src/a.rs",
            Some("one\ntwo\n"),
            "one\n2\n",
            &args,
        );
        assert_eq!(change.summary, "change src/a.rs (+1 -1)");
        let diff = change.diff.unwrap();
        assert!(
            diff.starts_with("--- a/src/a.rs\n+++ b/src/a.rs\n"),
            "{diff}"
        );
        assert!(diff.contains("-two\n+2\n"), "{diff}");
        let new = file_change("write_file", "n.txt", None, "hi\n", &args);
        assert_eq!(new.summary, "create n.txt (+1 -0)");
        assert!(new.diff.unwrap().starts_with("--- /dev/null\n"));
    }

    #[test]
    fn a_huge_diff_is_cut_saying_so() {
        let big = "x\n".repeat(100_000);
        let text = diff("big.txt", None, &big);
        assert!(text.len() < MAX_DIFF + 200);
        assert!(text.contains("more bytes of diff not shown"));
    }
}
