//! Landlock, the sandbox's first layer (Linux): the helper ([`crate::helper`]) restricts
//! itself to the paths it is given (read and execute for `-r`; everything a write needs for
//! `-w`) and scopes signals and abstract UNIX sockets to its own domain, then execs the
//! shell. The command then runs as the person, in the workspace, inside that domain; every
//! process it starts inherits it and can never leave it. The domain also denies, as
//! Landlock always does: mounting, unmounting and remounting anything (so the read-only bind
//! mounts of [`crate::mounts`] stay), and ptrace of any process outside the domain, which
//! covers `/proc/<pid>/environ`, `mem`, `root` and `fd` of the person's other processes.
//!
//! Rights never granted, whatever the path: `IOCTL_DEV` (ABI 5: no ioctl on a device opened
//! inside, so no TIOCSTI into a terminal the command opens, no pty of its own either), and
//! `MAKE_CHAR`/`MAKE_BLOCK` (a root command could otherwise `mknod` the disk in its
//! workspace and write it raw). A kernel older than an ABI simply lacks its rights and
//! scopes (best effort); [`probe`] names the ABI and `doctor` what it covers.

use std::path::PathBuf;

/// The newest ABI these rules were written and tested against (the machines here have 7).
#[cfg(target_os = "linux")]
const ABI_TESTED: ::landlock::ABI = ::landlock::ABI::V7;

/// What each ABI adds that these rules use, for `doctor`.
pub fn rules_at(abi: u8) -> Vec<&'static str> {
    let mut rules = vec!["filesystem grants"];
    if abi >= 3 {
        rules.push("truncate");
    }
    if abi >= 5 {
        rules.push("device ioctls denied (no TIOCSTI)");
    }
    if abi >= 6 {
        rules.push("signals and abstract UNIX sockets scoped");
    }
    rules
}

#[cfg(target_os = "linux")]
pub fn restrict(read: &[PathBuf], write: &[PathBuf]) -> Result<(), String> {
    use ::landlock::{
        Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope,
    };
    let all = AccessFs::from_all(ABI_TESTED);
    let never = AccessFs::IoctlDev | AccessFs::MakeChar | AccessFs::MakeBlock;
    let read_rights = AccessFs::from_read(ABI_TESTED);
    let write_rights = all & !never;
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|r| r.create())
        .map_err(|e| format!("cannot create a Landlock ruleset: {e}"))?;
    let grants = read
        .iter()
        .map(|p| (p, read_rights))
        .chain(write.iter().map(|p| (p, write_rights)));
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

#[cfg(not(target_os = "linux"))]
pub fn restrict(_read: &[PathBuf], _write: &[PathBuf]) -> Result<(), String> {
    Err("Landlock exists only on Linux".to_owned())
}

/// The Landlock ABI this kernel offers (a ruleset is created, not applied, for each ABI's
/// filesystem rights, newest first, as a hard requirement), or why there is none.
#[cfg(target_os = "linux")]
pub fn abi() -> Result<u8, String> {
    use ::landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
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
            Ok(_) => return Ok(n),
            Err(error) => last = error.to_string(),
        }
    }
    Err(format!("this kernel does not offer Landlock ({last})"))
}

#[cfg(not(target_os = "linux"))]
pub fn abi() -> Result<u8, String> {
    Err("Landlock exists only on Linux".to_owned())
}

/// `landlock (ABI 7)`, or why Landlock cannot confine here.
pub fn probe() -> Result<String, String> {
    abi().map(|n| format!("landlock (ABI {n})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_abi_names_what_it_adds() {
        assert_eq!(rules_at(1), ["filesystem grants"]);
        assert!(rules_at(5).iter().any(|r| r.contains("TIOCSTI")));
        assert!(!rules_at(5).iter().any(|r| r.contains("scoped")));
        assert!(rules_at(7).iter().any(|r| r.contains("abstract UNIX")));
    }
}
