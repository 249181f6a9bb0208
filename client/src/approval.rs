//! How an approval question reads in the terminal: what exactly will run (the command and
//! where, the file and its diff, the URL), the three options, and how to answer. Pure text,
//! every piece passed through `render::clean` (a model's text must not drive the terminal).

use lazyboy_protocol::{APPROVAL_OPTIONS, Approval};

use crate::render::{clean, one_line};

/// The lines under the question's title, without colours.
pub fn details(approval: &Approval, task: &str) -> String {
    let mut out = String::new();
    if let Some(command) = &approval.command {
        let workdir = approval.workdir.as_deref().unwrap_or(".");
        out.push_str(&format!("  command: {}\n", one_line(command)));
        out.push_str(&format!("  in:      {}\n", one_line(workdir)));
    }
    if let Some(url) = &approval.url {
        out.push_str(&format!("  url:     {}\n", one_line(url)));
    }
    if let Some(path) = &approval.path {
        out.push_str(&format!("  file:    {}\n", one_line(path)));
    }
    if let Some(diff) = &approval.diff {
        for line in clean(diff).lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    if approval.command.is_none() && approval.url.is_none() && approval.path.is_none() {
        out.push_str(&format!(
            "  {}: {}\n",
            one_line(&approval.tool),
            one_line(&approval.arguments)
        ));
    }
    for (i, option) in APPROVAL_OPTIONS.iter().enumerate() {
        out.push_str(&format!("  {}. {option}\n", i + 1));
    }
    out.push_str(&format!(
        "(type 1, 2 or 3 here, or a reason to deny; or: lazyboy approve {task} [--for-task] | \
         lazyboy deny {task} \"why\")\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::Effect;

    use super::*;

    #[test]
    fn a_command_shows_where_it_runs_and_how_to_answer() {
        let mut approval = Approval::new(
            "exec_command",
            Effect::Command,
            "run `rm -rf build` in .".into(),
            "{}".into(),
        );
        approval.command = Some("rm -rf build\u{1b}[2J".into());
        approval.workdir = Some(".".into());
        let text = details(&approval, "t-1");
        assert!(text.contains("  command: rm -rf build[2J\n"), "{text}");
        assert!(text.contains("  3. Approve the same for the rest of this task\n"));
        assert!(text.contains("lazyboy approve t-1"));
        assert!(!text.contains('\u{1b}'));
    }

    #[test]
    fn a_file_change_shows_its_diff_indented() {
        let mut approval =
            Approval::new("edit_file", Effect::WorkspaceWrite, "s".into(), "{}".into());
        approval.path = Some("a.txt".into());
        approval.diff = Some("--- a/a.txt\n+++ b/a.txt\n-old\n+new\n".into());
        let text = details(&approval, "t");
        assert!(
            text.contains("  file:    a.txt\n    --- a/a.txt\n"),
            "{text}"
        );
        assert!(text.contains("    +new\n"));
    }
}
