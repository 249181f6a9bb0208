//! The daemon's secrets (provider keys, the API token), held in this process's memory only.
//!
//! A process's environment is readable as `/proc/<pid>/environ` by every process of the same
//! user, and the commands agents run are exactly that (their parent is the daemon). So the
//! daemon takes its secrets out of its environment as the very first thing it does:
//!
//! 1. [`hand_over`]: the image started by the person (or `lazyboy daemon start`) reads the
//!    secret variables, writes them into a pipe and re-executes itself (same pid, same
//!    arguments plus the hidden `--secrets-fd N`) with those variables removed.
//! 2. [`receive`]: the new image reads the pipe to its end, closes it (so no command inherits
//!    it), and keeps the values here; [`var`] is how config and the token are read.
//! 3. [`deny_inspection`]: the new image marks itself not dumpable (Linux), so a process of
//!    the same user can neither read its memory (`/proc/<pid>/mem`, a debugger) nor its
//!    `/proc/<pid>/environ`; the kernel then makes its `/proc/<pid>/*` files root's.
//!
//! 4. [`known`]: the values, for [`crate::redact`], which keeps them (and their encodings)
//!    out of everything the daemon stores or sends.
//!
//! Ordering: this runs before `setsid`, the umask, the home's lock or any thread. An exec
//! drops close-on-exec descriptors, so a lock taken before it would be released and taken
//! again, leaving a window for a second daemon. The pid does not change across an exec, so
//! the pid in the lock, in health and in the CLI's child handle is the final process's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::sync::OnceLock;

use anyhow::{Context, bail};

/// Variables that always hold secrets; each provider's `api_key_env` adds its own.
pub const FIXED: [&str; 5] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "LAZYBOY_API_KEY",
    "LAZYBOY_TOKEN",
    // A PostgreSQL URL may carry the database's password.
    "LAZYBOY_DATABASE_URL",
];

/// The most a pipe is sure to hold without a reader (macOS starts pipes at 16 KiB): the
/// payload is written before the exec, when nobody reads yet.
const MAX_PAYLOAD: usize = 16 * 1024;

static SECRETS: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// A variable's value: from the secrets handed over at start, else from the environment (a
/// daemon that had nothing to hand over, or the library used in-process by tests).
pub fn var(name: &str) -> Option<String> {
    SECRETS
        .get()
        .and_then(|secrets| secrets.get(name).cloned())
        .or_else(|| std::env::var(name).ok())
}

/// The secret values known at start, by name, for [`crate::redact`]: those handed over, else
/// (nothing was handed over: tests in-process, a daemon without keys) the secret variables
/// still in the environment ([`FIXED`] and the configured key names).
pub(crate) fn known() -> Vec<(String, String)> {
    match SECRETS.get() {
        Some(secrets) => secrets
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect(),
        None => std::env::vars()
            .filter(|(name, _)| {
                // LAZYBOY_HOME and friends are no secrets; the configured key names are.
                FIXED.contains(&name.as_str())
                    || (crate::secret_env::is_secret(name) && !name.starts_with("LAZYBOY_"))
            })
            .collect(),
    }
}

/// The secret variable names: [`FIXED`] plus `extra` (the config's `api_key_env` entries).
pub fn names(extra: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = FIXED.iter().map(|n| (*n).to_owned()).collect();
    for name in extra {
        if !name.is_empty() && !name.contains(['=', '\0']) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Re-executes this program without the variables `names` in its environment, passing their
/// values through a pipe. Returns only when none of them is set (nothing to hide): then this
/// process goes on as the daemon.
pub fn hand_over(names: &[String]) -> anyhow::Result<()> {
    let found: Vec<(OsString, OsString)> = names
        .iter()
        .filter_map(|name| Some((OsString::from(name), std::env::var_os(name)?)))
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    let mut payload = Vec::new();
    for (name, value) in &found {
        // Neither part can hold a NUL (the kernel's environment is NUL-separated).
        payload.extend_from_slice(name.as_bytes());
        payload.push(b'=');
        payload.extend_from_slice(value.as_bytes());
        payload.push(0);
    }
    if payload.len() > MAX_PAYLOAD {
        bail!(
            "the secret variables ({}) hold over {MAX_PAYLOAD} bytes",
            names.join(", ")
        );
    }
    // Neither end is close-on-exec: the read end must reach the new image. The write end is
    // closed (dropped) before the exec, so the new image reads to an end of file.
    let (read_end, write_end) = nix::unistd::pipe().context("cannot create a pipe")?;
    let mut writer = std::fs::File::from(write_end);
    writer
        .write_all(&payload)
        .context("cannot write the secrets to the pipe")?;
    drop(writer);

    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| OsString::from("lazyboyd"));
    // /proc/self/exe still runs this binary if its file was replaced or deleted meanwhile
    // (a rebuild, an upgrade).
    let exe = if cfg!(target_os = "linux") {
        std::path::PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().context("cannot find this executable")?
    };
    let mut command = std::process::Command::new(&exe);
    command
        .arg0(arg0)
        .args(args)
        .arg("--secrets-fd")
        .arg(read_end.as_raw_fd().to_string());
    for (name, _) in &found {
        command.env_remove(name);
    }
    let error = command.exec();
    Err(error).with_context(|| {
        format!(
            "cannot re-execute {} to take the secrets out of the environment",
            exe.display()
        )
    })
}

/// In the re-executed image: reads the secrets from descriptor `fd` to its end, closes it,
/// and keeps them for [`var`].
pub fn receive(fd: i32) -> anyhow::Result<()> {
    let dir = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    // Opening the descriptor's name gives a descriptor of our own on the same pipe (no
    // unsafe adoption of a raw number); the inherited one is closed right after.
    let opened = std::fs::File::open(format!("{dir}/{fd}"));
    let closed = nix::unistd::close(fd);
    let mut payload = Vec::new();
    opened
        .and_then(|mut pipe| pipe.read_to_end(&mut payload))
        .with_context(|| format!("cannot read the secrets from descriptor {fd}"))?;
    closed.with_context(|| format!("cannot close descriptor {fd}"))?;
    let secrets = parse(&payload);
    if SECRETS.set(secrets).is_err() {
        bail!("the secrets were received twice");
    }
    Ok(())
}

/// `NAME=VALUE\0…` into a map; values that are not UTF-8 are dropped, as `std::env::var`
/// would not have read them either.
fn parse(payload: &[u8]) -> BTreeMap<String, String> {
    payload
        .split(|b| *b == 0)
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| {
            let (name, value) = OsString::from_vec(entry.to_vec())
                .into_string()
                .ok()?
                .split_once('=')
                .map(|(n, v)| (n.to_owned(), v.to_owned()))?;
            Some((name, value))
        })
        .collect()
}

/// Makes this process not dumpable: no core file, no debugger attach, no `/proc/<pid>/mem`
/// or `environ` for processes of the same user (root still may). Linux only: an exec resets
/// the flag, so the final image calls this. On macOS the equivalent, `ptrace(PT_DENY_ATTACH)`,
/// is not offered by nix (it would need `unsafe` libc); there the re-exec still keeps the
/// keys out of the environment (`ps -E`), but a debugger of the same user could read memory.
pub fn deny_inspection() -> anyhow::Result<()> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_dumpable(false).context("prctl(PR_SET_DUMPABLE, 0)")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trip_keeps_equals_signs_in_values() {
        let map = parse(b"A=1\0B=x=y\0\0C=\0bad\0");
        assert_eq!(map.get("A").map(String::as_str), Some("1"));
        assert_eq!(map.get("B").map(String::as_str), Some("x=y"));
        assert_eq!(map.get("C").map(String::as_str), Some(""));
        assert_eq!(map.len(), 3);
    }

    #[test]
    fn names_are_the_fixed_ones_plus_each_providers_once() {
        let names = names(["OLLAMA_KEY".into(), "OPENAI_API_KEY".into(), "".into()]);
        assert_eq!(names.len(), FIXED.len() + 1);
        assert!(names.contains(&"OLLAMA_KEY".to_owned()));
    }
}
