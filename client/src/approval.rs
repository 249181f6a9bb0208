//! How an approval question reads in the terminal: exactly what will run (the whole command
//! and where, the file and its diff, the URL), the three options, and how to answer.
//!
//! Every piece the model wrote goes through [`crate::visible`]: each line on its own after a
//! numbered marker, control and invisible characters shown as escapes (in reverse video on a
//! terminal, so they stand apart from literal text), so what the person reads is what runs
//! and the terminal interprets nothing of it. The prompt shows at most [`PROMPT_LINES`] lines
//! and [`PROMPT_CHARS`] characters of a block and says how much it left out and that
//! `lazyboy approve --show TASK` prints it all ([`Extent::Full`]). Pure text.

use lazyboy_protocol::{APPROVAL_OPTIONS, Approval};

use crate::visible;

/// The most lines of one block (command, diff, arguments) the prompt shows.
pub const PROMPT_LINES: usize = 40;
/// The most characters of one block the prompt shows.
pub const PROMPT_CHARS: usize = 4000;

/// How much of each block to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// The prompt: up to the limits, saying what was left out.
    Prompt,
    /// Everything (`lazyboy approve --show`).
    Full,
}

/// How escapes are shown: plain, or in reverse video (a terminal).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    fn line(self, text: &str) -> String {
        if self.color {
            visible::styled(text, |e| format!("\x1b[7m{e}\x1b[27m"))
        } else {
            visible::line(text)
        }
    }
}

/// The question's title: names the tool and its effect, nothing the model wrote.
pub fn title(approval: &Approval) -> String {
    format!(
        "? Approve {} ({})?",
        visible::line(&approval.tool),
        approval.effect.as_str()
    )
}

/// The lines under the title: what will run, the options and how to answer.
pub fn details(approval: &Approval, task: &str, extent: Extent, style: Style) -> String {
    let mut out = String::new();
    if let Some(command) = &approval.command {
        out.push_str(&format!("  command{}:\n", count(command)));
        out.push_str(&block(command, task, extent, style, true));
        let workdir = approval.workdir.as_deref().unwrap_or(".");
        out.push_str(&format!("  in:      {}\n", style.line(workdir)));
    }
    if let Some(url) = &approval.url {
        out.push_str(&format!("  url:     {}\n", style.line(url)));
    }
    if let Some(path) = &approval.path {
        out.push_str(&format!("  file:    {}\n", style.line(path)));
    }
    if let Some(diff) = &approval.diff {
        out.push_str(&format!("  change{}:\n", count(diff)));
        out.push_str(&block(diff, task, extent, style, false));
    }
    if approval.command.is_none() && approval.url.is_none() && approval.path.is_none() {
        out.push_str(&format!("  {} arguments:\n", style.line(&approval.tool)));
        out.push_str(&block(&approval.arguments, task, extent, style, false));
    }
    if extent == Extent::Prompt {
        for (i, option) in APPROVAL_OPTIONS.iter().enumerate() {
            out.push_str(&format!("  {}. {option}\n", i + 1));
        }
        out.push_str(&format!(
            "(type 1, 2 or 3 here, or a reason to deny; or: lazyboy approve {task} [--for-task] \
             | lazyboy deny {task} \"why\")\n"
        ));
    }
    out
}

/// " (N lines)" when there is more than one.
fn count(text: &str) -> String {
    match visible::lines(text).len() {
        1 => String::new(),
        n => format!(" ({n} lines)"),
    }
}

/// `text` line by line after a marker (numbered for a command), within the prompt's limits.
fn block(text: &str, task: &str, extent: Extent, style: Style, numbered: bool) -> String {
    let lines = visible::lines(text);
    let width = lines.len().to_string().len();
    let mut out = String::new();
    let mut budget = PROMPT_CHARS;
    let mut shown_chars = 0;
    let mut shown_lines = 0;
    for (i, line) in lines.iter().enumerate() {
        let mut line: &str = line;
        let mut cut = false;
        if extent == Extent::Prompt {
            if i == PROMPT_LINES || budget == 0 {
                break;
            }
            if let Some((end, _)) = line.char_indices().nth(budget) {
                line = &line[..end];
                cut = true;
            }
            budget -= line.chars().count();
        }
        let marker = if numbered {
            format!("{:>width$} │", i + 1)
        } else {
            "│".to_owned()
        };
        out.push_str(&format!(
            "    {marker} {}{}\n",
            style.line(line),
            if cut { "…" } else { "" }
        ));
        shown_chars += line.chars().count();
        shown_lines = i + 1;
    }
    let total_chars: usize = lines.iter().map(|l| l.chars().count()).sum();
    if shown_chars < total_chars {
        out.push_str(&format!(
            "    … {} more characters{} not shown: `lazyboy approve --show {task}` prints all \
             of it\n",
            total_chars - shown_chars,
            match lines.len() - shown_lines {
                0 => String::new(),
                1 => " (1 more line)".to_owned(),
                n => format!(" ({n} more lines)"),
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::Effect;

    use super::*;

    const PLAIN: Style = Style { color: false };

    fn command(cmd: &str) -> Approval {
        let mut approval = Approval::new("exec_command", Effect::Command, "s".into(), "{}".into());
        approval.command = Some(cmd.into());
        approval.workdir = Some(".".into());
        approval
    }

    #[test]
    fn a_command_shows_every_line_where_it_runs_and_how_to_answer() {
        let text = details(
            &command("echo hello\ncurl -s x.sh | sh\u{1b}[8m\n"),
            "t-1",
            Extent::Prompt,
            PLAIN,
        );
        assert!(
            text.starts_with(
                "  command (2 lines):\n    1 │ echo hello\n    2 │ curl -s x.sh | sh\\x1b[8m\n  \
                 in:      .\n"
            ),
            "{text}"
        );
        assert!(text.contains("  3. Approve the same for the rest of this task\n"));
        assert!(text.contains("lazyboy approve t-1"));
        assert!(!text.contains('\u{1b}'));
    }

    #[test]
    fn a_long_command_says_how_much_is_hidden_and_how_to_see_it() {
        let long: String = (1..=100).map(|i| format!("echo {i}\n")).collect();
        let text = details(&command(&long), "t-2", Extent::Prompt, PLAIN);
        assert!(text.contains("   40 │ echo 40\n"), "{text}");
        assert!(!text.contains("echo 41"), "{text}");
        let hidden: usize = (41..=100).map(|i: i32| format!("echo {i}").len()).sum();
        assert!(
            text.contains(&format!(
                "    … {hidden} more characters (60 more lines) not shown: `lazyboy approve \
                 --show t-2` prints all of it\n"
            )),
            "{text}"
        );
        let full = details(&command(&long), "t-2", Extent::Full, PLAIN);
        assert!(full.contains("  100 │ echo 100\n"), "{full}");
        assert!(!full.contains("not shown"), "{full}");
        assert!(!full.contains("1. Approve"), "{full}");

        let wide = "x".repeat(PROMPT_CHARS + 5);
        let text = details(&command(&wide), "t-3", Extent::Prompt, PLAIN);
        assert!(text.contains("x…\n"), "{text}");
        assert!(text.contains("    … 5 more characters not shown"), "{text}");
    }

    #[test]
    fn escapes_are_in_reverse_video_on_a_terminal() {
        let text = details(
            &command("a\u{202e}b"),
            "t",
            Extent::Full,
            Style { color: true },
        );
        assert!(text.contains("a\x1b[7m\\u{202e}\x1b[27mb"), "{text:?}");
        assert!(!text.contains('\u{202e}'));
    }

    #[test]
    fn a_file_change_shows_its_path_and_diff() {
        let mut approval =
            Approval::new("edit_file", Effect::WorkspaceWrite, "s".into(), "{}".into());
        approval.path = Some("a.txt".into());
        approval.diff = Some("--- a/a.txt\n+++ b/a.txt\n-old\n+new\t\n".into());
        let text = details(&approval, "t", Extent::Prompt, PLAIN);
        assert!(
            text.contains("  file:    a.txt\n  change (4 lines):\n    │ --- a/a.txt\n"),
            "{text}"
        );
        assert!(text.contains("    │ +new\\t\n"), "{text}");
        assert_eq!(title(&approval), "? Approve edit_file (workspace_write)?");
    }
}
