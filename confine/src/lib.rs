//! `lazyboy-sandbox`, the sandbox helper (Linux): `lazyboy-sandbox [--sandbox-exec] [-r PATH |
//! -w PATH]... -- SHELL -c SCRIPT` restricts itself with Landlock to the paths given (read and
//! execute for `-r`; everything for `-w`), scopes signals to its own sandbox, sets
//! `no_new_privs`, and execs the shell. The command then runs as the person, in the workspace,
//! inside that domain; every process it starts inherits it and can never leave it.
//!
//! A crate of its own so that the helper program, which the daemon starts for every confined
//! command, carries only this and the `landlock` crate (the daemon's dependencies would make
//! it a hundred times larger and slower to start). The daemon links it too: `lazyboyd
//! --sandbox-exec` is the same [`helper_main`], run first thing in `lazyboyd::cli::main`,
//! before any thread exists (Landlock restricts the calling thread, and an exec keeps it).
//!
//! Invariant: it never runs the shell unconfined. When the kernel does not enforce the
//! ruleset it exits 126 saying why, and that is the command's output.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// The hidden first argument that makes `lazyboyd` the sandbox helper (the helper program
/// accepts it too, so both take the same arguments).
pub const HELPER_FLAG: &str = "--sandbox-exec";

/// Exit code of a command the helper refused to start.
pub const REFUSED: u8 = 126;

/// The parsed arguments of the helper.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Spec {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// The program and its arguments (`bash -c SCRIPT`).
    pub command: Vec<OsString>,
}

/// Parses the arguments after [`HELPER_FLAG`].
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Spec, String> {
    let mut spec = Spec::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("-r") => spec.read.push(args.next().ok_or("-r needs a path")?.into()),
            Some("-w") => spec
                .write
                .push(args.next().ok_or("-w needs a path")?.into()),
            Some("--") => {
                spec.command = args.collect();
                break;
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    if spec.command.is_empty() {
        return Err("no command after --".to_owned());
    }
    Ok(spec)
}

/// The helper as a process: its arguments, with or without [`HELPER_FLAG`] first
/// (`lazyboyd --sandbox-exec ...` and `lazyboy-sandbox ...` take the same ones).
pub fn helper_main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().map(|arg| arg.as_os_str()) == Some(HELPER_FLAG.as_ref()) {
        args.next();
    }
    exec_main(args)
}

/// The helper's whole life: confine, then exec. Returns only on failure.
fn exec_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let spec = match parse(args) {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("lazyboy sandbox: {error}");
            return ExitCode::from(REFUSED);
        }
    };
    if let Err(error) = restrict(&spec) {
        eprintln!("lazyboy sandbox: not running the command: {error}");
        return ExitCode::from(REFUSED);
    }
    let error = exec(&spec.command);
    eprintln!("lazyboy sandbox: cannot run {:?}: {error}", spec.command[0]);
    ExitCode::from(REFUSED)
}

/// Execs the command (falling back from bash to sh, as the host does unconfined).
fn exec(command: &[OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let run = |program: &OsString| {
        std::process::Command::new(program)
            .args(&command[1..])
            .exec()
    };
    let error = run(&command[0]);
    if error.kind() == std::io::ErrorKind::NotFound && command[0] == "bash" {
        return run(&OsString::from("sh"));
    }
    error
}

#[cfg(target_os = "linux")]
mod imp {
    use ::landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };

    use super::Spec;

    /// The newest ABI these rules were written and tested against (the machines here have 7).
    const ABI_TESTED: ABI = ABI::V7;

    pub fn restrict(spec: &Spec) -> Result<(), String> {
        let all = AccessFs::from_all(ABI_TESTED);
        let read = AccessFs::from_read(ABI_TESTED);
        let mut ruleset = Ruleset::default()
            .handle_access(all)
            .and_then(|r| r.scope(Scope::Signal))
            .and_then(|r| r.create())
            .map_err(|e| format!("cannot create a Landlock ruleset: {e}"))?;
        let grants = spec
            .read
            .iter()
            .map(|p| (p, read))
            .chain(spec.write.iter().map(|p| (p, all)));
        for (path, access) in grants {
            // A path that vanished since the daemon listed it grants nothing.
            let Ok(fd) = PathFd::new(path) else { continue };
            // Directory rights on a file are invalid: keep the ones a file can have.
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(ABI_TESTED)
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("cannot grant {}: {e}", path.display()))?;
        }
        let status = ruleset
            .restrict_self()
            .map_err(|e| format!("cannot apply the Landlock ruleset: {e}"))?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("this kernel does not enforce Landlock".to_owned());
        }
        Ok(())
    }

    /// Whether Landlock works here, and its ABI: a ruleset is created (not applied) for each
    /// ABI's filesystem rights, newest first, as a hard requirement.
    pub fn probe() -> Result<String, String> {
        let mut last = String::new();
        for (abi, n) in [
            (ABI::V7, 7),
            (ABI::V6, 6),
            (ABI::V5, 5),
            (ABI::V4, 4),
            (ABI::V3, 3),
            (ABI::V2, 2),
            (ABI::V1, 1),
        ] {
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))
                .and_then(|r| r.create());
            match created {
                Ok(_) => return Ok(format!("landlock (ABI {n})")),
                Err(error) => last = error.to_string(),
            }
        }
        Err(format!("this kernel does not offer Landlock ({last})"))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Spec;

    pub fn restrict(_spec: &Spec) -> Result<(), String> {
        Err("Landlock exists only on Linux".to_owned())
    }

    pub fn probe() -> Result<String, String> {
        Err("Landlock exists only on Linux".to_owned())
    }
}

pub use imp::probe;
use imp::restrict;

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_grants_then_the_command() {
        let spec = parse(os(&[
            "-r", "/usr", "-w", "/w", "-r", "/etc", "--", "bash", "-c", "-r x",
        ]))
        .unwrap();
        assert_eq!(spec.read, [PathBuf::from("/usr"), PathBuf::from("/etc")]);
        assert_eq!(spec.write, [PathBuf::from("/w")]);
        assert_eq!(spec.command, os(&["bash", "-c", "-r x"]));
    }

    #[test]
    fn refuses_what_it_does_not_understand() {
        assert!(parse(os(&["-r"])).is_err());
        assert!(parse(os(&["--bogus", "--", "sh"])).is_err());
        assert!(parse(os(&["-w", "/w", "--"])).is_err());
    }
}
