//! Loop fuses: spotting an agent that repeats itself, without capping honest long work.
//!
//! There is no round quota for normal work (only `LAZYBOY_MAX_ROUNDS_TOTAL` as a last
//! resort). Instead, per task, counting only calls that change something (not `read`,
//! `control` or `person` effects) and not waits that brought new output:
//! - the same call with the same result twice in a row gets a reminder to change approach;
//! - the same call with the same result six times in a row stops the task `blocked`;
//! - the same error 8 times in a row, or 14 failed calls in a row, stop it `blocked`.
//!
//! "In a row" is among counted calls: reads and plan updates in between neither break nor
//! extend a run, any other counted call breaks it. A message from the person (an answer, a
//! steer, a `continue`) starts the count afresh. Watching a long build is progress, not a
//! loop. Pure logic, no IO.

use std::hash::{DefaultHasher, Hash, Hasher};

use lazyboy_protocol::Effect;

/// Identical state-changing calls with identical results, in a row, that stop the task.
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
    /// The last counted (call, result) and how many times in a row it came.
    last_call: Option<u64>,
    same_call_run: u32,
    last_error: Option<u64>,
    same_error_run: u32,
    failure_run: u32,
}

/// Whether calls with this effect can be a loop the fuses stop.
pub fn counts(effect: Effect) -> bool {
    !matches!(effect, Effect::Read | Effect::Control | Effect::Person)
}

/// Replaces with `*` what follows each `marker` in `text`, when `token` (given the text
/// after the marker) says how long it is: the parts of a result that differ between runs of
/// the same command.
fn mask_after(text: &str, marker: &str, token: impl Fn(&str) -> Option<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        if let Some(len) = token(rest) {
            out.push('*');
            rest = &rest[len..];
        }
    }
    out.push_str(rest);
    out
}

/// Command ids (`cmd-…`) differ on every run of the same command; they are masked so the
/// same command with the same output counts as the same result.
fn mask_ids(text: &str) -> String {
    mask_after(text, "cmd-", |rest| {
        let len = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        (len > 0).then_some(len)
    })
}

/// A command's run time (" after 1.2 s") differs between runs of the same command, more so
/// on a loaded machine; it is masked too, so the same command with the same output is the
/// same result however long it took.
fn mask_durations(text: &str) -> String {
    mask_after(text, " after ", |rest| {
        let len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        (len > 0 && rest[len..].starts_with(" s")).then_some(len)
    })
}

fn hash_of(parts: &[&str]) -> u64 {
    let mut hasher = DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}

impl LoopGuard {
    /// How long the longest current run is (identical calls, same error, failures): what a
    /// fuse that fired was about.
    pub fn run_len(&self) -> u32 {
        self.same_call_run
            .max(self.same_error_run)
            .max(self.failure_run)
    }

    /// The person spoke (an answer, a steer, a continue): runs start afresh.
    pub fn reset(&mut self) {
        *self = LoopGuard::default();
    }

    /// Records one result and says what to do. `progress`: a wait that brought output the
    /// model had not seen.
    pub fn record(
        &mut self,
        effect: Effect,
        name: &str,
        arguments: &str,
        output: &str,
        is_error: bool,
        progress: bool,
    ) -> Fuse {
        if !counts(effect) || progress {
            return Fuse::Continue;
        }
        let output = &mask_durations(&mask_ids(output));
        let call = hash_of(&[name, arguments, output]);
        if self.last_call == Some(call) {
            self.same_call_run += 1;
        } else {
            self.last_call = Some(call);
            self.same_call_run = 1;
        }
        let count = self.same_call_run;
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
                "stopped: `{name}` was called {count} times in a row with the same arguments \
                 and got the same result each time"
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
                "You have now called `{name}` {count} times in a row with the same arguments \
                 and got the same result. Repeating it will not change the outcome: observe the \
                 current state and try a different approach, or report_blocked if you cannot \
                 proceed."
            ));
        }
        Fuse::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_identical_calls_interleaved_with_others_never_block() {
        let mut guard = LoopGuard::default();
        for i in 0..6 {
            let same = guard.record(
                Effect::Command,
                "exec_command",
                "echo same",
                "same",
                false,
                false,
            );
            assert_eq!(same, Fuse::Continue, "at {i}");
            let other = format!("echo {i}");
            let fuse = guard.record(
                Effect::Command,
                "exec_command",
                &other,
                &other,
                false,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "at {i}");
        }
        // Reads and plan updates in between neither break nor extend a run.
        for _ in 0..5 {
            guard.record(
                Effect::Command,
                "exec_command",
                "make",
                "exit 2",
                false,
                false,
            );
            guard.record(Effect::Read, "read_file", "{}", "x", false, false);
            guard.record(
                Effect::Control,
                "update_plan",
                "{}",
                "plan updated",
                false,
                false,
            );
        }
        assert!(matches!(
            guard.record(
                Effect::Command,
                "exec_command",
                "make",
                "exit 2",
                false,
                false
            ),
            Fuse::Block(_)
        ));
    }

    #[test]
    fn the_person_speaking_starts_the_count_afresh() {
        let mut guard = LoopGuard::default();
        for _ in 0..5 {
            guard.record(
                Effect::Command,
                "exec_command",
                "make",
                "exit 2",
                false,
                false,
            );
        }
        guard.reset();
        assert_eq!(
            guard.record(
                Effect::Command,
                "exec_command",
                "make",
                "exit 2",
                false,
                false
            ),
            Fuse::Continue
        );
    }

    #[test]
    fn reminds_at_two_and_blocks_at_six_identical() {
        let mut guard = LoopGuard::default();
        let mut outcomes = Vec::new();
        for _ in 0..6 {
            outcomes.push(guard.record(
                Effect::Command,
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
            Effect::Command,
            "exec_command",
            "{}",
            "cmd-aaa exit 0",
            false,
            false,
        );
        let second = guard.record(
            Effect::Command,
            "exec_command",
            "{}",
            "cmd-bbb exit 0",
            false,
            false,
        );
        assert!(matches!(second, Fuse::Remind(_)));
    }

    #[test]
    fn durations_are_masked_but_nothing_else() {
        assert_eq!(
            mask_durations("cmd-1 exited with code 0 after 0.1 s\noutput:\nsame"),
            mask_durations("cmd-1 exited with code 0 after 12.0 s\noutput:\nsame"),
        );
        assert_eq!(mask_durations("after 3 days"), "after 3 days");
        assert_eq!(mask_durations("ran after 2.5 s."), "ran after * s.");
        assert_ne!(
            mask_durations("after 0.1 s\noutput:\na"),
            mask_durations("after 0.1 s\noutput:\nb")
        );
    }

    #[test]
    fn observations_and_productive_waits_never_count() {
        let mut guard = LoopGuard::default();
        for _ in 0..50 {
            assert_eq!(
                guard.record(Effect::Read, "read_file", "{}", "same", false, false),
                Fuse::Continue
            );
            assert_eq!(
                guard.record(
                    Effect::Command,
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
            Effect::Command,
            "await_command",
            "{\"id\":\"c\"}",
            "still running",
            false,
            false,
        );
        assert!(matches!(
            guard.record(
                Effect::Command,
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
                Effect::Command,
                "write_file",
                &format!("{{\"n\":{i}}}"),
                "disk full",
                true,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "at {i}");
        }
        let fuse = guard.record(
            Effect::Command,
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
                Effect::Command,
                "exec_command",
                &format!("{i}"),
                &format!("error {}", i % 2),
                true,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "at {i}");
        }
        assert_eq!(
            guard.record(Effect::Command, "exec_command", "ok", "fine", false, false),
            Fuse::Continue
        );
        for i in 0..13 {
            let fuse = guard.record(
                Effect::Command,
                "exec_command",
                &format!("b{i}"),
                &format!("error {}", i % 2),
                true,
                false,
            );
            assert_eq!(fuse, Fuse::Continue, "after reset, at {i}");
        }
        let fuse = guard.record(
            Effect::Command,
            "exec_command",
            "b13",
            "error x",
            true,
            false,
        );
        assert!(matches!(fuse, Fuse::Block(r) if r.contains("14 tool calls")));
    }
}
