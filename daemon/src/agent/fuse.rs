//! Loop fuses: spotting an agent that repeats itself, without capping honest long work.
//!
//! There is no round quota for normal work (only `LAZYBOY_MAX_ROUNDS_TOTAL` as a last
//! resort). Instead, per task:
//! - the second identical (tool, arguments, result) gets a reminder to change approach;
//! - the same state-changing call with the same result a 6th time stops the task `blocked`;
//! - the same error 8 times in a row, or 14 failed calls in a row, stop it `blocked`.
//!
//! Observations (read-only tools) never count, and neither do waits that brought new output:
//! watching a long build is progress, not a loop. Pure logic, no IO.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::tools::ToolKind;

/// Identical state-changing calls with identical results that stop the task.
pub const SAME_CALL_LIMIT: u32 = 6;
/// The same error, consecutively, that stops the task.
pub const SAME_ERROR_LIMIT: u32 = 8;
/// Failed calls in a row that stop the task.
pub const FAILURE_LIMIT: u32 = 14;

/// What the loop should do after a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fuse {
    Continue,
    /// Tell the model (once per repetition) to change approach.
    Remind(String),
    /// Stop the task as `blocked`, with this reason.
    Block(String),
}

/// The guard's memory for one task.
#[derive(Debug, Default)]
pub struct LoopGuard {
    identical: HashMap<u64, u32>,
    last_error: Option<u64>,
    same_error_run: u32,
    failure_run: u32,
}

/// Command ids (`cmd-…`) differ on every run of the same command; they are masked so the
/// same command with the same output counts as the same result.
fn mask_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("cmd-") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let id_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        if id_len > 0 {
            out.push('*');
        }
        rest = &rest[id_len..];
    }
    out.push_str(rest);
    out
}

fn hash_of(parts: &[&str]) -> u64 {
    let mut hasher = DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}

impl LoopGuard {
    /// Records one result and says what to do.
    pub fn record(
        &mut self,
        kind: ToolKind,
        name: &str,
        arguments: &str,
        output: &str,
        is_error: bool,
        new_output: bool,
    ) -> Fuse {
        match kind {
            ToolKind::ReadOnly | ToolKind::Control => return Fuse::Continue,
            ToolKind::Wait if new_output => return Fuse::Continue,
            ToolKind::Wait | ToolKind::Mutating => {}
        }
        let output = &mask_ids(output);
        let count = {
            let entry = self
                .identical
                .entry(hash_of(&[name, arguments, output]))
                .or_insert(0);
            *entry += 1;
            *entry
        };
        if is_error {
            self.failure_run += 1;
            let error = hash_of(&[output]);
            if self.last_error == Some(error) {
                self.same_error_run += 1;
            } else {
                self.last_error = Some(error);
                self.same_error_run = 1;
            }
        } else {
            self.failure_run = 0;
            self.same_error_run = 0;
            self.last_error = None;
        }
        if count >= SAME_CALL_LIMIT {
            return Fuse::Block(format!(
                "stopped: `{name}` was called {count} times with the same arguments and got the \
                 same result each time"
            ));
        }
        if self.same_error_run >= SAME_ERROR_LIMIT {
            return Fuse::Block(format!(
                "stopped: the same error came back {} times in a row",
                self.same_error_run
            ));
        }
        if self.failure_run >= FAILURE_LIMIT {
            return Fuse::Block(format!(
                "stopped: {} tool calls in a row failed",
                self.failure_run
            ));
        }
        if count >= 2 {
            return Fuse::Remind(format!(
                "You have now called `{name}` {count} times with the same arguments and got the \
                 same result. Repeating it will not change the outcome: observe the current \
                 state and try a different approach, or report_blocked if you cannot proceed."
            ));
        }
        Fuse::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reminds_at_two_and_blocks_at_six_identical() {
        let mut guard = LoopGuard::default();
        let mut outcomes = Vec::new();
        for _ in 0..6 {
            outcomes.push(guard.record(
                ToolKind::Mutating,
                "exec_command",
                "{\"cmd\":\"make\"}",
                "exit 2",
                false,
                false,
            ));
        }
        assert_eq!(outcomes[0], Fuse::Continue);
        for remind in &outcomes[1..5] {
            assert!(matches!(remind, Fuse::Remind(_)), "{remind:?}");
        }
        assert!(matches!(&outcomes[5], Fuse::Block(r) if r.contains("6 times")));
    }

    #[test]
    fn command_ids_do_not_make_results_differ() {
        assert_eq!(
            mask_ids("cmd-0a1b exited 0; log: .lazyboy-output/cmd-0a1b.log"),
            "cmd-* exited 0; log: .lazyboy-output/cmd-*.log"
        );
        let mut guard = LoopGuard::default();
        guard.record(
            ToolKind::Mutating,
            "exec_command",
            "{}",
            "cmd-aaa exit 0",
            false,
            false,
        );
        let second = guard.record(
            ToolKind::Mutating,
            "exec_command",
            "{}",
            "cmd-bbb exit 0",
            false,
            false,
        );
        assert!(matches!(second, Fuse::Remind(_)));
    }

    #[test]
    fn observations_and_productive_waits_never_count() {
        let mut guard = LoopGuard::default();
        for _ in 0..50 {
            assert_eq!(
                guard.record(ToolKind::ReadOnly, "read_file", "{}", "same", false, false),
                Fuse::Continue
            );
            assert_eq!(
                guard.record(
                    ToolKind::Wait,
                    "await_command",
                    "{\"id\":\"c\"}",
                    "more output",
                    false,
                    true
                ),
                Fuse::Continue
            );
        }
        // A wait with nothing new does count.
        guard.record(
            ToolKind::Wait,
            "await_command",
            "{\"id\":\"c\"}",
            "still running",
            false,
            false,
        );
        assert!(matches!(
            guard.record(
                ToolKind::Wait,
                "await_command",
                "{\"id\":\"c\"}",
                "still running",
                false,
                false
            ),
            Fuse::Remind(_)
        ));
    }

    #[test]
    fn same_error_eight_times_blocks_even_with_different_arguments() {
        let mut guard = LoopGuard::default();
        for i in 0..7 {
            let fuse = guard.record(
                ToolKind::Mutating,
                "write_file",
                &format!("{{\"n\":{i}}}"),
                "disk full",
                true,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "at {i}");
        }
        let fuse = guard.record(
            ToolKind::Mutating,
            "write_file",
            "{\"n\":8}",
            "disk full",
            true,
            false,
        );
        assert!(matches!(fuse, Fuse::Block(r) if r.contains("same error")));
    }

    #[test]
    fn fourteen_failures_in_a_row_block_and_a_success_resets() {
        let mut guard = LoopGuard::default();
        for i in 0..13 {
            let fuse = guard.record(
                ToolKind::Mutating,
                "exec_command",
                &format!("{i}"),
                &format!("error {}", i % 2),
                true,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "at {i}");
        }
        assert_eq!(
            guard.record(
                ToolKind::Mutating,
                "exec_command",
                "ok",
                "fine",
                false,
                false
            ),
            Fuse::Continue
        );
        for i in 0..13 {
            let fuse = guard.record(
                ToolKind::Mutating,
                "exec_command",
                &format!("b{i}"),
                &format!("error {}", i % 2),
                true,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "after reset, at {i}");
        }
        let fuse = guard.record(
            ToolKind::Mutating,
            "exec_command",
            "b13",
            "error x",
            true,
            false,
        );
        assert!(matches!(fuse, Fuse::Block(r) if r.contains("14 tool calls")));
    }
}
