//! Running `systemctl --user` and `launchctl`: what they said, as one value.

use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// What one run of `systemctl`/`launchctl` said.
pub(super) struct Ran {
    /// `program args`, for messages.
    pub command: String,
    pub ok: bool,
    pub out: String,
    pub err: String,
}

impl Ran {
    /// An error (with the tool's own words) unless it succeeded.
    pub fn check(self) -> anyhow::Result<Ran> {
        if !self.ok {
            bail!("`{}` failed: {}", self.command, self.err.trim());
        }
        Ok(self)
    }
}

/// Runs the tool; an error only if it cannot be run at all (not installed).
pub(super) fn tool(program: &str, args: &[&str]) -> anyhow::Result<Ran> {
    let command = format!("{program} {}", args.join(" "));
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{command}`"))?;
    Ok(Ran {
        command,
        ok: output.status.success(),
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
        err: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

pub(super) fn systemctl(args: &[&str]) -> anyhow::Result<Ran> {
    tool("systemctl", &[&["--user"], args].concat())
}

pub(super) fn launchctl(args: &[&str]) -> anyhow::Result<Ran> {
    tool("launchctl", args)
}
