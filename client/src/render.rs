//! Text output: one line per event, and small tables. Text a model or a command wrote is
//! passed through [`clean`] (no escape sequence reaches the terminal); what waits for the
//! person's approval is shown by `approval.rs`, exactly.

use lazyboy_protocol::{Agent, AgentState, Event, EventBody, StepStatus, TaskState, ToolStatus};

/// `#seq agent kind summary`, on one line.
pub fn event_line(event: &Event) -> String {
    let summary = match event.body() {
        Some(EventBody::UserMessage { text }) => one_line(&text),
        Some(EventBody::AgentCreated { model, .. }) => {
            model.map(|m| format!("model {m}")).unwrap_or_default()
        }
        Some(EventBody::AgentDeleted {}) => String::new(),
        Some(EventBody::TaskCreated { objective, .. }) => one_line(&objective),
        Some(EventBody::AgentMessage { text } | EventBody::RuntimeNote { text }) => one_line(&text),
        Some(EventBody::ToolCall {
            name, arguments, ..
        }) => {
            format!("{name} {}", call_summary(&name, &arguments))
        }
        Some(EventBody::TaskFinished { message, .. }) => one_line(&message),
        // One line cannot show a command exactly: say where to see it.
        Some(EventBody::Question {
            approval: Some(approval),
            ..
        }) => format!(
            "approval: {} ({}); `lazyboy approve --show {}` shows what will run",
            crate::visible::line(&approval.tool),
            approval.effect.as_str(),
            event.task.as_deref().unwrap_or("TASK")
        ),
        Some(EventBody::ScheduleAdded {
            schedule,
            cron,
            objective,
            ..
        }) => format!("{schedule} {} {}", one_line(&cron), one_line(&objective)),
        Some(EventBody::ScheduleFired {
            schedule,
            task,
            missed,
            ..
        }) => format!(
            "{schedule} → {task}{}",
            if missed { " (missed slot)" } else { "" }
        ),
        Some(EventBody::ScheduleSkipped {
            schedule, reason, ..
        }) => format!("{schedule}: {}", one_line(&reason)),
        Some(
            EventBody::ScheduleRemoved { schedule }
            | EventBody::SchedulePaused { schedule }
            | EventBody::ScheduleResumed { schedule },
        ) => schedule,
        Some(_) | None => one_line(&event.data.to_string()),
    };
    format!("#{} {} {} {}", event.seq, event.agent, event.kind, summary)
        .trim_end()
        .to_owned()
}

/// Now, in ms since the epoch (to age heartbeats).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The agent's state, with `(no heartbeat for N s)` when its lease ran out: a client shows an
/// agent alive only while its heartbeat is under 30 s old (alive is not progressing).
fn state_word(agent: &Agent, now_ms: i64) -> String {
    let state = agent.state.as_str();
    match (agent.state, agent.lease_expires_at_ms) {
        (AgentState::Running | AgentState::Recovering, Some(expires)) if expires < now_ms => {
            format!("{state} (lease expired)")
        }
        _ => state.to_owned(),
    }
}

/// How long ago the heartbeat was, or `-`.
fn heartbeat_age(agent: &Agent, now_ms: i64) -> String {
    match agent.heartbeat_at_ms {
        Some(at) if matches!(agent.state, AgentState::Running | AgentState::Recovering) => {
            format!("{}s", (now_ms - at).max(0) / 1000)
        }
        _ => "-".to_owned(),
    }
}

/// Agents as an aligned table: name, state, current task, heartbeat age, model.
pub fn agent_table(agents: &[Agent], now_ms: i64) -> String {
    let rows: Vec<[String; 5]> = agents
        .iter()
        .map(|a| {
            [
                a.name.clone(),
                state_word(a, now_ms),
                a.current_task.clone().unwrap_or_else(|| "-".to_owned()),
                heartbeat_age(a, now_ms),
                a.model.clone().unwrap_or_else(|| "(default)".to_owned()),
            ]
        })
        .collect();
    let header = ["NAME", "STATE", "TASK", "HEARTBEAT", "MODEL"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:width$}  ", width = widths[i]));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(header);
    for row in &rows {
        out.push_str(&line([&row[0], &row[1], &row[2], &row[3], &row[4]]));
    }
    out
}

/// One agent, field by field.
pub fn agent_details(agent: &Agent, now_ms: i64) -> String {
    let mut out = format!(
        "name:         {}\nstate:        {}\ncurrent task: {}\nheartbeat:    {}\nmodel:        {}\nworkspace:    {}\n",
        agent.name,
        state_word(agent, now_ms),
        agent.current_task.as_deref().unwrap_or("-"),
        heartbeat_age(agent, now_ms),
        agent.model.as_deref().unwrap_or("(default)"),
        agent.workspace,
    );
    out.push_str(&format!("usage:        {}\n", usage(&agent.usage)));
    if let Some(node) = &agent.node {
        out.push_str(&format!(
            "node:         {} (its tasks run only there)\n",
            clean(node)
        ));
    }
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "(none)".to_owned()
        } else {
            items.join(", ")
        }
    };
    out.push_str(&format!("sandbox:      {}\n", agent.sandbox.as_str()));
    if agent.sandbox == lazyboy_protocol::Sandbox::WorkspaceWrite {
        let git = if agent.git_write {
            "writable (--git-write true)"
        } else {
            "read-only"
        };
        out.push_str(&format!("git dirs:     {git}\n"));
    }
    out.push_str(&format!(
        "approve:      {}\n",
        list(
            agent
                .approve
                .iter()
                .map(|e| e.as_str().to_owned())
                .collect()
        )
    ));
    out.push_str(&format!(
        "allow:        {}\n",
        list(agent.allow.iter().map(|r| format!("{r:?}")).collect())
    ));
    out.push_str(&format!("mcp:          {}\n", list(agent.mcp.clone())));
    if agent.instructions.trim().is_empty() {
        out.push_str("instructions: (none)\n");
    } else {
        out.push_str(&format!(
            "instructions:\n{}\n",
            clean(agent.instructions.trim())
        ));
    }
    out
}

/// Tokens and cost: "12.3k in (1.0k cached), 2.1k out, $0.0123" ("~" when estimated).
pub fn usage(usage: &lazyboy_protocol::Usage) -> String {
    let mark = if usage.estimated { "~" } else { "" };
    let mut text = format!(
        "{mark}{} in ({} cached), {mark}{} out",
        tokens(usage.input_tokens),
        tokens(usage.cached_tokens),
        tokens(usage.output_tokens)
    );
    if let Some(micro) = usage.cost_microusd {
        text.push_str(&format!(", ${:.4}", micro as f64 / 1_000_000.0));
    }
    if usage.estimated {
        text.push_str(" (~ estimated: the provider reported no usage)");
    }
    text
}

/// A token count, short: 950, 12.3k, 4.5M.
pub fn tokens(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..1_000_000 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// `text` without terminal control characters (escape sequences from a model or a command's
/// output must not drive the person's terminal); newlines and tabs stay.
pub fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

/// `text` on one line, cut at 120 characters.
pub fn one_line(text: &str) -> String {
    let text = &clean(text);
    const MAX: usize = 120;
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > MAX {
        let cut: String = flat.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// Prints a task's events as they stream: text deltas inline, one line per tool step, the
/// plan, the agent's messages, and the verdict. With `json`, one JSON event per line.
pub struct TaskPrinter {
    json: bool,
    color: bool,
    /// Whether a text delta left the cursor mid-line.
    mid_line: bool,
}

impl TaskPrinter {
    pub fn new(json: bool) -> TaskPrinter {
        use std::io::IsTerminal;
        TaskPrinter {
            json,
            color: std::io::stdout().is_terminal(),
            mid_line: false,
        }
    }

    fn dim(&self, text: &str) -> String {
        let text = &clean(text);
        if self.color {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn bold(&self, text: &str) -> String {
        let text = &clean(text);
        if self.color {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn print(&mut self, out: &mut impl std::io::Write, event: &Event) -> std::io::Result<()> {
        if self.json {
            let line = serde_json::to_string(event).map_err(std::io::Error::other)?;
            return writeln!(out, "{line}");
        }
        let Some(body) = event.body() else {
            return Ok(());
        };
        if let EventBody::AssistantDelta { text } = &body {
            self.mid_line = !text.ends_with('\n');
            return write!(out, "{}", self.dim(text));
        }
        if self.mid_line {
            writeln!(out)?;
            self.mid_line = false;
        }
        match body {
            EventBody::PlanUpdated { steps, .. } => {
                writeln!(out, "plan:")?;
                for step in steps {
                    let mark = match step.status {
                        StepStatus::Pending => "[ ]",
                        StepStatus::InProgress => "[>]",
                        StepStatus::Completed => "[x]",
                    };
                    writeln!(out, "  {mark} {}", step.step)?;
                }
            }
            EventBody::ToolCall {
                name, arguments, ..
            } if !matches!(name.as_str(), "send_message" | "update_plan") => {
                writeln!(out, "→ {name} {}", call_summary(&name, &arguments))?;
            }
            EventBody::ToolResult {
                name,
                status,
                output,
                ..
            } if !matches!(name.as_str(), "send_message" | "update_plan")
                || status != ToolStatus::Ok =>
            {
                let first = output.lines().next().unwrap_or("");
                let mark = match status {
                    ToolStatus::Ok => "✓".to_owned(),
                    ToolStatus::Error => "✗".to_owned(),
                    ToolStatus::Unknown => "? unknown:".to_owned(),
                    ToolStatus::Skipped => "- skipped:".to_owned(),
                };
                writeln!(
                    out,
                    "  {}",
                    self.dim(&format!("{mark} {}", one_line(first)))
                )?;
            }
            EventBody::AgentMessage { text } => writeln!(out, "{}", self.bold(&text))?,
            EventBody::Question {
                approval: Some(approval),
                ..
            } => {
                // Not the question's text: it quotes the command, which the details show
                // whole and visible.
                let task = event.task.as_deref().unwrap_or("TASK");
                writeln!(out, "{}", self.bold(&crate::approval::title(&approval)))?;
                let style = crate::approval::Style { color: self.color };
                let details = crate::approval::details(
                    &approval,
                    task,
                    crate::approval::Extent::Prompt,
                    style,
                );
                write!(out, "{details}")?;
            }
            EventBody::ApprovalDecided {
                decision, reason, ..
            } => {
                let text = match (decision, reason) {
                    (lazyboy_protocol::Decision::Deny, Some(reason)) => {
                        format!("✗ denied: {}", one_line(&reason))
                    }
                    (lazyboy_protocol::Decision::Deny, None) => "✗ denied".to_owned(),
                    (lazyboy_protocol::Decision::Approve, _) => "✓ approved".to_owned(),
                    (lazyboy_protocol::Decision::ApproveForTask, _) => {
                        "✓ approved for the rest of this task".to_owned()
                    }
                };
                writeln!(out, "{}", self.dim(&text))?;
            }
            EventBody::Question {
                question,
                options,
                takeover,
                ..
            } => {
                match takeover {
                    Some(reason) => writeln!(
                        out,
                        "{}",
                        self.bold(&format!("? over to you ({reason}): {question}"))
                    )?,
                    None => writeln!(out, "{}", self.bold(&format!("? {question}")))?,
                }
                for (i, option) in options.iter().enumerate() {
                    writeln!(out, "  {}. {}", i + 1, one_line(option))?;
                }
                let task = event.task.as_deref().unwrap_or("TASK");
                writeln!(
                    out,
                    "{}",
                    self.dim(&format!(
                        "(answer here, or: lazyboy answer {task} \"...\" | --option N)"
                    ))
                )?;
            }
            EventBody::RuntimeNote { text } => {
                writeln!(
                    out,
                    "{}",
                    self.dim(&format!("(runtime) {}", one_line(&text)))
                )?;
            }
            EventBody::Heartbeat {
                operation,
                elapsed_ms,
            } => writeln!(
                out,
                "{}",
                self.dim(&format!("… {operation} ({}s)", elapsed_ms / 1000))
            )?,
            EventBody::TaskState {
                state: TaskState::Recovering,
            } => writeln!(out, "{}", self.dim("(recovering after a daemon restart)"))?,
            EventBody::TaskFinished { verdict, message } => {
                let verdict = serde_json::to_value(verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                writeln!(out, "{}", self.bold(&format!("[{verdict}]")))?;
                if !message.is_empty() {
                    writeln!(out, "{}", clean(&message))?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The most telling argument of a call, on one line.
fn call_summary(name: &str, arguments: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    let key = match name {
        "exec_command" => "cmd",
        "write_stdin" | "await_command" | "kill_command" => "id",
        "search" => "pattern",
        _ => "path",
    };
    match value.get(key).and_then(|v| v.as_str()) {
        Some(text) => one_line(text),
        None => one_line(arguments),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_from_models_are_removed() {
        let hostile = "ok\u{1b}]0;pwned\u{7}\u{1b}[2J done\u{9b}31m\nnext\tline";
        assert_eq!(clean(hostile), "ok]0;pwned[2J done31m\nnext\tline");
        assert!(!one_line(hostile).contains('\u{1b}'));
    }
}
