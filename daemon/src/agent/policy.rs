//! An agent's boundaries as decisions: which calls wait for the person's approval, which
//! commands its allow list pre-approves, which calls its sandbox refuses outright, what "the
//! same call" means for "approve the same for the rest of this task", and how a typed answer
//! reads as a decision. Plain functions, no IO.

use lazyboy_protocol::{Approval, Decision, Effect, Sandbox, approvable};
use serde_json::Value;

use super::AnswerError;

/// The agent's rules, as its task sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Effects whose calls wait for the person.
    pub approve: Vec<Effect>,
    /// `exec_command` rules that need no approval.
    pub allow: Vec<String>,
    pub sandbox: Sandbox,
    /// Its commands may change the repositories' git directories (see `confine::git`).
    pub git_write: bool,
}

impl Policy {
    /// The policy of an agent, from its stored boundaries.
    pub fn of(agent: &str, stored: &crate::store::Boundaries) -> Policy {
        Policy {
            approve: stored.approve(),
            allow: stored.allow(),
            sandbox: stored.sandbox(agent),
            git_write: stored.git_write,
        }
    }
}

/// Why the sandbox refuses a call before it runs (the file tools of a read-only agent).
pub fn refused(policy: &Policy, effect: Effect) -> Option<String> {
    (policy.sandbox == Sandbox::ReadOnly && effect == Effect::WorkspaceWrite).then(|| {
        "refused: this agent's sandbox is read-only, so it cannot write files; report what \
         should change instead"
            .to_owned()
    })
}

/// Whether a call must wait for the person's approval: its effect is one the agent's
/// policy names, and (for `exec_command`) no allow rule covers its command.
pub fn needs_approval(policy: &Policy, effect: Effect, tool: &str, args: &Value) -> bool {
    if !approvable(effect) || !policy.approve.contains(&effect) {
        return false;
    }
    let command = (tool == "exec_command")
        .then(|| args.get("cmd").and_then(Value::as_str))
        .flatten();
    !command.is_some_and(|cmd| allowed(&policy.allow, cmd))
}

/// Characters that chain, redirect or substitute: a command holding any of them is never
/// pre-approved, so `git status; rm -rf ~` cannot ride on the rule `git status*`.
const SHELL_SPECIAL: &[char] = &[
    ';', '&', '|', '<', '>', '`', '$', '(', ')', '{', '}', '\n', '\r', '\\', '\'', '"', '*', '?',
    '[', '~', '#', '!',
];

/// Whether an allow rule covers `command`. Rules and command are compared with their
/// whitespace runs folded to one space; `*` in a rule matches any run of characters, and a
/// rule must cover the whole command ("git status" is exact, "cargo test*" a prefix).
pub fn allowed(rules: &[String], command: &str) -> bool {
    if command.contains(SHELL_SPECIAL) {
        return false;
    }
    let command = fold(command);
    !command.is_empty() && rules.iter().any(|rule| glob(&fold(rule), &command))
}

fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `*`-only glob over the whole text.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*` at all: exact.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// What "the same call" is for "approve the same for the rest of this task": the tool and
/// the command (whitespace folded), else the file, else the URL, else the arguments.
pub fn same_call_key(approval: &Approval) -> String {
    let what = approval
        .command
        .as_deref()
        .map(fold)
        .or_else(|| approval.path.clone())
        .or_else(|| approval.url.clone())
        .unwrap_or_else(|| approval.arguments.clone());
    format!("{}\n{what}", approval.tool)
}

/// The result a denied call gets.
pub fn denial(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("denied by the person: {reason}"),
        None => "denied by the person: no reason given; do not try the same thing another way \
                 without asking"
            .to_owned(),
    }
}

/// A person's answer to an approval question as a decision: an option (1 approve, 2 deny,
/// 3 approve the same for the rest of the task; text given with it is a denial's reason),
/// or typed text: a yes/no word or an option's name, anything else denies with the text as
/// the reason (so "use cargo check instead" tells the model what to do).
pub fn decision_from_answer(
    option: Option<usize>,
    text: Option<&str>,
) -> Result<(Decision, Option<String>), AnswerError> {
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    if let Some(n) = option {
        let decision = Decision::from_option(n).ok_or(AnswerError::BadOption(n, 3))?;
        return Ok((decision, text.map(str::to_owned)));
    }
    let text = text.ok_or(AnswerError::Empty)?;
    let word = text.to_lowercase();
    let decision = match word.trim_end_matches(['.', '!']) {
        "1" | "y" | "yes" | "ok" | "approve" | "approved" => Decision::Approve,
        "2" | "n" | "no" | "deny" | "denied" => Decision::Deny,
        "3" | "always" | "approve the same for the rest of this task" => Decision::ApproveForTask,
        _ => return Ok((Decision::Deny, Some(text.to_owned()))),
    };
    Ok((decision, None))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(approve: &[Effect], allow: &[&str]) -> Policy {
        Policy {
            approve: approve.to_vec(),
            allow: allow.iter().map(|r| (*r).to_owned()).collect(),
            sandbox: Sandbox::WorkspaceWrite,
            git_write: false,
        }
    }

    #[test]
    fn only_named_effects_wait_and_reads_never_do() {
        let p = policy(&[Effect::Command], &[]);
        let cmd = json!({"cmd": "make"});
        assert!(needs_approval(&p, Effect::Command, "exec_command", &cmd));
        assert!(!needs_approval(
            &p,
            Effect::WorkspaceWrite,
            "write_file",
            &json!({})
        ));
        let reads = policy(&[Effect::Read, Effect::Control], &[]);
        assert!(!needs_approval(
            &reads,
            Effect::Read,
            "read_file",
            &json!({})
        ));
        assert!(!needs_approval(
            &reads,
            Effect::Control,
            "update_plan",
            &json!({})
        ));
        assert!(!needs_approval(
            &Policy::default(),
            Effect::Command,
            "exec_command",
            &cmd
        ));
    }

    #[test]
    fn allow_rules_pre_approve_exact_commands_and_star_prefixes() {
        let rules = ["git status".to_owned(), "cargo test*".to_owned()];
        assert!(allowed(&rules, "git status"));
        assert!(allowed(&rules, "  git   status "));
        assert!(!allowed(&rules, "git status --porcelain"));
        assert!(allowed(&rules, "cargo test"));
        assert!(allowed(&rules, "cargo test -p lazyboyd --lib"));
        assert!(!allowed(&rules, "cargo build"));
        assert!(!allowed(&rules, ""));
        let p = policy(&[Effect::Command], &["git status"]);
        assert!(!needs_approval(
            &p,
            Effect::Command,
            "exec_command",
            &json!({"cmd": "git status"})
        ));
        // Only exec_command's command is matched: other tools with the effect still ask.
        assert!(needs_approval(
            &p,
            Effect::Command,
            "write_stdin",
            &json!({"cmd": "git status"})
        ));
    }

    #[test]
    fn chained_or_substituted_commands_are_never_pre_approved() {
        let rules = ["git status*".to_owned(), "*".to_owned()];
        for bad in [
            "git status; rm -rf ~",
            "git status && curl x",
            "git status | sh",
            "git status > ~/.bashrc",
            "git status $(rm -rf /)",
            "git status `id`",
            "git status\nrm -rf /",
            "git status 'a;b'",
        ] {
            assert!(!allowed(&rules, bad), "{bad}");
        }
        assert!(allowed(&rules, "anything plain"));
    }

    #[test]
    fn globs_match_the_whole_text() {
        assert!(glob("a*c", "abbbc"));
        assert!(glob("a*b*c", "a-b-c"));
        assert!(!glob("a*b*c", "a-c"));
        assert!(glob("*", ""));
        assert!(!glob("abc", "abcd"));
        assert!(glob("ab*", "ab"));
    }

    #[test]
    fn read_only_refuses_file_writes_only() {
        let mut p = policy(&[], &[]);
        assert_eq!(refused(&p, Effect::WorkspaceWrite), None);
        p.sandbox = Sandbox::ReadOnly;
        assert!(refused(&p, Effect::WorkspaceWrite).is_some());
        assert_eq!(refused(&p, Effect::Command), None);
    }

    #[test]
    fn the_same_call_is_the_same_command_file_or_url() {
        let mut a = Approval::new("exec_command", Effect::Command, "s".into(), "{}".into());
        a.command = Some("cargo  test".into());
        let mut b = a.clone();
        b.command = Some("cargo test".into());
        assert_eq!(same_call_key(&a), same_call_key(&b));
        b.command = Some("cargo test -q".into());
        assert_ne!(same_call_key(&a), same_call_key(&b));
        let mut w = Approval::new(
            "write_file",
            Effect::WorkspaceWrite,
            "s".into(),
            "{}".into(),
        );
        w.path = Some("a.txt".into());
        let mut e = w.clone();
        e.tool = "edit_file".into();
        assert_ne!(same_call_key(&w), same_call_key(&e));
    }

    #[test]
    fn answers_read_as_decisions() {
        let d = |o, t| decision_from_answer(o, t).unwrap();
        assert_eq!(d(Some(1), None), (Decision::Approve, None));
        assert_eq!(d(Some(2), Some("no")), (Decision::Deny, Some("no".into())));
        assert_eq!(d(Some(3), None), (Decision::ApproveForTask, None));
        assert_eq!(d(None, Some("Yes")), (Decision::Approve, None));
        assert_eq!(d(None, Some("2")), (Decision::Deny, None));
        assert_eq!(
            d(None, Some("use cargo check instead")),
            (Decision::Deny, Some("use cargo check instead".into()))
        );
        assert!(matches!(
            decision_from_answer(Some(4), None),
            Err(AnswerError::BadOption(4, 3))
        ));
        assert!(matches!(
            decision_from_answer(None, Some("  ")),
            Err(AnswerError::Empty)
        ));
        assert_eq!(
            denial(Some(" too risky ")),
            "denied by the person: too risky"
        );
        assert!(denial(None).starts_with("denied by the person: "));
    }
}
