//! The system prompt: the turn contract, the agent's own instructions, and the runtime
//! context (plan and running commands) rebuilt every round.

use std::fmt::Write;

use lazyboy_protocol::{PlanStep, StepStatus};

use crate::tools::commands::CommandInfo;

const CONTRACT: &str = "You are a LazyBoy agent: you carry out the person's objective on \
their computer, working in the workspace directory below with the tools you are given.

How a turn works:
- send_message is the only thing the person sees. Your plain reply text is a private \
scratchpad. Reply without any tool call only when you are finished for now.
- For work with several steps, keep a plan with update_plan (at most one step in_progress).
- Read-only tools in one reply run in parallel; commands and writes run one after another, in \
order.
- Commands keep running in the background when they outlast block_until_ms; follow them with \
await_command, write_stdin or kill_command.
- When the objective is achieved and verified, call report_done alone, with the evidence. If \
you cannot go on without the person, call report_blocked alone.
- A tool result marked unknown means the daemon restarted while that call ran: observe the \
current state before acting again; never assume it did or did not happen.";

/// The whole system prompt for one round.
pub fn system(
    instructions: &str,
    workspace: &str,
    prior: Option<&str>,
    plan: &[PlanStep],
    running: &[CommandInfo],
) -> String {
    let mut prompt = String::from(CONTRACT);
    let _ = write!(prompt, "\n\nWorkspace: {workspace}");
    if !instructions.trim().is_empty() {
        let _ = write!(prompt, "\n\n# Your instructions\n{}", instructions.trim());
    }
    if let Some(prior) = prior {
        let _ = write!(prompt, "\n\n# Earlier conversation\n{prior}");
    }
    prompt.push_str("\n\n# Runtime context\n");
    if plan.is_empty() {
        prompt.push_str("Plan: none yet.\n");
    } else {
        prompt.push_str("Plan:\n");
        for step in plan {
            let mark = match step.status {
                StepStatus::Pending => "[ ]",
                StepStatus::InProgress => "[>]",
                StepStatus::Completed => "[x]",
            };
            let _ = writeln!(prompt, "{mark} {}", step.step);
        }
    }
    if running.is_empty() {
        prompt.push_str("Running commands: none.\n");
    } else {
        prompt.push_str("Running commands:\n");
        for command in running {
            let _ = writeln!(prompt, "- {}: {}", command.id, command.cmd);
        }
    }
    prompt
}
