//! What this machine lets the sandbox apply, asked once and reported by `doctor`: the
//! helper's `--probe` ([`super::helper`]) tries the mount namespace and seccomp (and
//! Landlock) on a throwaway process, since the daemon, threaded and unconfined, cannot try
//! them on itself; and [`start`] sets up the tasks' cgroups after the home's lock is held.

use std::path::Path;
use std::sync::OnceLock;

/// Each layer: `Ok`, or why it cannot be applied here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// The mount namespace that keeps the git directories read-only.
    pub namespace: Result<(), String>,
    pub landlock: Result<(), String>,
    pub seccomp: Result<(), String>,
}

static LAYERS: OnceLock<Layers> = OnceLock::new();

/// What the helper could apply (it runs once, the first time this is asked).
pub fn layers() -> &'static Layers {
    LAYERS.get_or_init(probe)
}

fn probe() -> Layers {
    let helper = super::helper();
    let spawned = super::reaper::track(
        || {
            std::process::Command::new(&helper)
                .args([super::HELPER_FLAG, "--probe"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
        },
        |child| Some(child.id()),
    );
    let output = spawned.and_then(|child| {
        let pid = child.id();
        let output = child.wait_with_output();
        if let Ok(pid) = i32::try_from(pid) {
            super::reaper::forget(pid);
        }
        output
    });
    match output {
        Ok(output) => parse(&String::from_utf8_lossy(&output.stdout)),
        Err(error) => {
            let why = format!(
                "cannot run the sandbox helper {}: {error}",
                helper.display()
            );
            Layers {
                namespace: Err(why.clone()),
                landlock: Err(why.clone()),
                seccomp: Err(why),
            }
        }
    }
}

/// The probe's `layer=ok` / `layer=why` lines.
pub fn parse(text: &str) -> Layers {
    let layer = |name: &str| match text
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
    {
        Some("ok") => Ok(()),
        Some(why) => Err(why.to_owned()),
        None => Err("the sandbox helper did not say".to_owned()),
    };
    Layers {
        namespace: layer("namespace"),
        landlock: layer("landlock"),
        seccomp: layer("seccomp"),
    }
}

/// At the daemon's start, with the home's lock held: logs what confines commands here,
/// probes the helper's layers, and sets up the cgroups (killing what an earlier daemon on
/// `home` left running).
pub fn start(home: &Path) {
    match super::status() {
        Ok(what) => tracing::info!(sandbox = %what, "agents' host commands can be confined"),
        Err(why) => tracing::warn!(
            %why,
            "agents' host commands cannot be confined here: agents whose sandbox is not `off` \
             will have their commands refused"
        ),
    }
    if cfg!(target_os = "linux") {
        let layers = layers();
        if let Err(why) = &layers.seccomp {
            tracing::warn!(%why, "no seccomp filter: confined commands will be refused");
        }
        if let Err(why) = &layers.namespace {
            tracing::warn!(
                %why,
                "no mount namespace: the git directories in workspaces are not protected"
            );
        }
    }
    let home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    match super::cgroup::start(&home) {
        Ok((base, 0)) => {
            tracing::info!(cgroups = %base.display(), "each task's commands get a cgroup")
        }
        Ok((base, count)) => tracing::warn!(
            cgroups = %base.display(),
            count,
            "killed the processes of commands an earlier daemon left running"
        ),
        Err(why) => tracing::warn!(
            %why,
            "no cgroups: a task's processes that leave its commands' marker behind are stopped \
             only with the daemon"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_says_each_layer() {
        let layers = parse("namespace=unshare(CLONE_NEWNS): EPERM\nlandlock=ok\nseccomp=ok\n");
        assert_eq!(
            layers.namespace,
            Err("unshare(CLONE_NEWNS): EPERM".to_owned())
        );
        assert_eq!(layers.landlock, Ok(()));
        assert_eq!(layers.seccomp, Ok(()));
        assert!(parse("").seccomp.is_err());
    }
}
