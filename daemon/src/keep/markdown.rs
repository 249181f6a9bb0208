//! A [`TaskExport`] as Markdown that reads well on GitHub and in a browser: the task's
//! facts, the objective, the plan as it evolved, the conversation with every tool call
//! (arguments and result in fenced blocks, spilled outputs folded in `<details>`), the
//! verdict, the deliverables with sizes and hashes, and the usage.
//!
//! Whatever the agent or a tool wrote goes inside fences longer than any run of backticks
//! it holds, or is quoted, so it cannot break the document's structure.

use std::fmt::Write;

use lazyboy_protocol::{ExportEntry, ExportFile, StepStatus, TaskExport};

/// A fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn block(out: &mut String, lang: &str, text: &str) {
    let fence = fence(text);
    let _ = writeln!(
        out,
        "{fence}{lang}\n{}\n{fence}\n",
        text.trim_end_matches('\n')
    );
}

/// Text as a Markdown quote, every line prefixed.
fn quote(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "> {line}");
    }
    out.push('\n');
}

fn time(at_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(at_ms)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

/// Inline text for a table cell or heading: no newlines or pipes.
fn inline(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|")
}

fn file_row(out: &mut String, file: &ExportFile) {
    let sha = file.sha256.as_deref().unwrap_or("—");
    let note = file.missing.as_deref().map(inline).unwrap_or_default();
    let _ = writeln!(
        out,
        "| `{}` | {} | `{sha}` | {note} |",
        inline(&file.path),
        file.bytes
    );
}

/// Renders the export.
pub fn render(export: &TaskExport) -> String {
    let task = &export.task;
    let mut out = String::new();
    let title = task.objective.lines().next().unwrap_or("");
    let _ = writeln!(out, "# Task {}: {}\n", task.id, inline(title));
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| agent | {} |", inline(&task.agent));
    let _ = writeln!(out, "| state | {} |", task.state.as_str());
    let _ = writeln!(out, "| workspace | `{}` |", inline(&task.workspace));
    let _ = writeln!(out, "| created | {} |", time(task.created_at_ms));
    let _ = writeln!(out, "| updated | {} |", time(task.updated_at_ms));
    let _ = writeln!(out, "| exported | {} |\n", time(export.exported_at_ms));

    out.push_str("## Objective\n\n");
    quote(&mut out, &task.objective);

    out.push_str("## Plan\n\n");
    if export.plans.is_empty() {
        out.push_str("No plan was recorded.\n\n");
    }
    for (n, plan) in export.plans.iter().enumerate() {
        let _ = writeln!(out, "### Revision {} ({})\n", n + 1, time(plan.at_ms));
        if let Some(why) = &plan.explanation {
            quote(&mut out, why);
        }
        for step in &plan.steps {
            let mark = match step.status {
                StepStatus::Completed => "[x]",
                StepStatus::InProgress => "[~]",
                StepStatus::Pending => "[ ]",
            };
            let _ = writeln!(out, "- {mark} {}", inline(&step.step));
        }
        out.push('\n');
    }

    out.push_str("## Conversation\n\n");
    for entry in &export.entries {
        match entry {
            ExportEntry::Message {
                at_ms, from, text, ..
            } => {
                let _ = writeln!(out, "### {from} · {}\n", time(*at_ms));
                quote(&mut out, text);
            }
            ExportEntry::Question {
                at_ms,
                question,
                options,
                answer,
                ..
            } => {
                let _ = writeln!(out, "### question · {}\n", time(*at_ms));
                quote(&mut out, question);
                for (n, option) in options.iter().enumerate() {
                    let _ = writeln!(out, "{}. {}", n + 1, inline(option));
                }
                match answer {
                    Some(answer) => {
                        out.push_str("\n**Answer:**\n\n");
                        quote(&mut out, answer);
                    }
                    None => out.push_str("\n*Not answered.*\n\n"),
                }
            }
            ExportEntry::ToolCall {
                at_ms,
                call_id,
                name,
                arguments,
                status,
                result,
                removed,
                spilled,
                images,
                ..
            } => {
                let status =
                    status.map_or("no result".to_owned(), |s| format!("{s:?}").to_lowercase());
                let _ = writeln!(
                    out,
                    "### tool call `{}` ({status}) · {}\n\n`{}`\n",
                    inline(name),
                    time(*at_ms),
                    inline(call_id)
                );
                out.push_str("Arguments:\n\n");
                block(&mut out, "json", arguments);
                if let Some(result) = result {
                    out.push_str("Result:\n\n");
                    block(&mut out, "", result);
                }
                if let Some(mark) = removed {
                    let _ = writeln!(
                        out,
                        "*Removed by retention after {} days: {} bytes, {} lines, sha256 `{}`.*\n",
                        mark.days, mark.bytes, mark.lines, mark.sha256
                    );
                }
                if let Some(spill) = spilled {
                    let _ = writeln!(
                        out,
                        "<details><summary>The whole output: <code>{}</code>, {} bytes{}</summary>\n",
                        inline(&spill.path).replace('<', "&lt;"),
                        spill.bytes,
                        if spill.truncated {
                            " (cut at the export's cap)"
                        } else {
                            ""
                        }
                    );
                    block(&mut out, "", &spill.text);
                    out.push_str("</details>\n\n");
                }
                if !images.is_empty() {
                    out.push_str(
                        "Screenshots:\n\n| file | bytes | sha256 | |\n|---|---|---|---|\n",
                    );
                    for image in images {
                        file_row(&mut out, image);
                    }
                    out.push('\n');
                }
            }
        }
    }

    out.push_str("## Verdict\n\n");
    match &export.verdict {
        Some(verdict) => {
            let _ = writeln!(
                out,
                "**{}** · {}\n",
                format!("{:?}", verdict.verdict).to_lowercase(),
                time(verdict.at_ms)
            );
            quote(&mut out, &verdict.message);
        }
        None => out.push_str("The task has no verdict yet.\n\n"),
    }

    out.push_str("## Deliverables\n\n");
    if export.deliverables.is_empty() {
        out.push_str("None were listed.\n\n");
    } else {
        out.push_str("| file | bytes | sha256 | |\n|---|---|---|---|\n");
        for file in &export.deliverables {
            file_row(&mut out, file);
        }
        out.push('\n');
    }
    if !export.omitted.is_empty() {
        out.push_str("Not included (past the export's cap):\n\n");
        for name in &export.omitted {
            let _ = writeln!(out, "- `{}`", inline(name));
        }
        out.push('\n');
    }

    let usage = &export.usage;
    out.push_str(
        "## Usage\n\n| input tokens | cached | output tokens | cost |\n|---|---|---|---|\n",
    );
    let cost = usage
        .cost_microusd
        .map_or("—".to_owned(), |c| format!("${:.6}", c as f64 / 1e6));
    let _ = writeln!(
        out,
        "| {} | {} | {} | {cost} |{}",
        usage.input_tokens,
        usage.cached_tokens,
        usage.output_tokens,
        if usage.estimated {
            " (some counted by the daemon)"
        } else {
            ""
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::fence;

    #[test]
    fn fences_outlast_the_content() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ```` b"), "`````");
    }
}
