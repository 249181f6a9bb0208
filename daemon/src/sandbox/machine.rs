//! The box as an [`Machine`]: `box_shell` commands run through the same
//! [`CommandRegistry`](crate::tools::CommandRegistry) as host commands (output log in the
//! workspace, backgrounding, `box_await`, `box_kill`), but inside the container, as `box`
//! (uid 1000), with `bash -lc`.
//!
//! The registry owns a local child with piped stdio, so the command is spawned through the
//! `docker exec -i` client (it ships with every engine, and streams stdin/stdout/stderr as
//! pipes). Killing that client does not stop the process inside, so every command carries
//! its id in its environment (`LAZYBOYD_COMMAND_ID`, inside and in the client), and a kill
//! (`box_kill`, a task stop, a timeout, recovery after a crash) also kills, inside the
//! container, every process carrying that marker and their process groups. A reused pid is
//! never touched: only marked processes are.

use std::io;
use std::path::Path;
use std::process::Stdio;

use futures_util::future::BoxFuture;
use tokio::process::Child;

use crate::confine::machine::Machine;
use crate::confine::tree::MARKER;

/// Kills every process in the container whose environment carries `MARKER=<argv[1]>`, and
/// its process group (never group 0/1 or our own); prints how many it found.
pub const KILL_MARKED: &str = r#"
import os, sys
mark = ("LAZYBOYD_COMMAND_ID=" + sys.argv[1]).encode()
mine, found = os.getpgrp(), 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if mark not in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
            continue
        group = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[2])
        found += 1
        if group > 1 and group != mine:
            try: os.killpg(group, 9)
            except OSError: pass
        os.kill(int(pid), 9)
    except (OSError, ValueError, IndexError):
        pass
print(found)
"#;

/// The box's container, for one agent's commands.
#[derive(Debug, Clone)]
pub struct BoxMachine {
    /// The container's id.
    pub container: String,
    pub docker: bollard::Docker,
}

impl Machine for BoxMachine {
    fn name(&self) -> &'static str {
        "box"
    }

    fn spawn(&self, script: &str, workdir: &Path, marker: &str) -> io::Result<Child> {
        let mut command = tokio::process::Command::new("docker");
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(crate::secret_env::is_secret) {
                command.env_remove(name);
            }
        }
        command
            .env(MARKER, marker)
            .args(["exec", "-i", "-u", "box", "-w"])
            .arg(workdir)
            .arg("-e")
            .arg(format!("{MARKER}={marker}"))
            .arg(&self.container)
            .args(["bash", "-lc", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // Tracked, like host commands: the daemon reaps zombies it adopted, never tokio's.
        crate::confine::reaper::spawn_tracked(|| command.spawn()).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    e.kind(),
                    "the docker command is not installed on this machine (box_shell runs \
                     through `docker exec`); install Docker's client",
                )
            } else {
                e
            }
        })
    }

    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move {
            let path = path.to_string_lossy();
            let out = super::docker::exec(
                &self.docker,
                &self.container,
                "box",
                &["cat", "--", &path],
                None,
                std::time::Duration::from_secs(60),
            )
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
            if out.success() {
                Ok(out.stdout)
            } else {
                Err(io::Error::other(out.complaint()))
            }
        })
    }

    fn write<'a>(&'a self, path: &'a Path, bytes: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(async move {
            let path = path.to_string_lossy();
            let out = super::docker::exec(
                &self.docker,
                &self.container,
                "box",
                &[
                    "sh",
                    "-c",
                    r#"mkdir -p -- "$(dirname -- "$1")" && cat > "$1""#,
                    "sh",
                    &path,
                ],
                Some(bytes),
                std::time::Duration::from_secs(60),
            )
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
            if out.success() {
                Ok(())
            } else {
                Err(io::Error::other(out.complaint()))
            }
        })
    }

    /// The workdir lives in the box; `docker exec -w` refuses one that does not exist, and
    /// that refusal is the command's output.
    fn is_dir(&self, _path: &Path) -> bool {
        true
    }

    fn kill(&self, marker: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (docker, container, marker) = (
            self.docker.clone(),
            self.container.clone(),
            marker.to_owned(),
        );
        runtime.spawn(async move {
            let result = kill_marked(&docker, &container, &marker).await;
            if let Err(error) = result {
                tracing::warn!(%error, command = %marker, "cannot kill the command in the box");
            }
        });
    }
}

/// Kills command `marker`'s processes in the container; how many there were.
pub async fn kill_marked(
    docker: &bollard::Docker,
    container: &str,
    marker: &str,
) -> Result<u32, super::BoxError> {
    let out = super::docker::exec(
        docker,
        container,
        "root",
        &["python3", "-c", KILL_MARKED, marker],
        None,
        std::time::Duration::from_secs(20),
    )
    .await?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// The reaper runs on every SIGCHLD: a box command's `docker exec` client that has exited
    /// must still be tokio's to wait for (an untracked one was reaped first, and the command
    /// then "ended with an unknown status").
    #[tokio::test]
    async fn the_reaper_leaves_a_box_commands_client_to_tokio() {
        let machine = BoxMachine {
            container: "lazyboy-test-no-such-box".into(),
            docker: bollard::Docker::connect_with_local_defaults().unwrap(),
        };
        let mut child = machine
            .spawn("true", Path::new("/"), "cmd-reaper-test")
            .expect("the docker client (scripts/test installs docker.io)");
        let pid = i32::try_from(child.id().unwrap()).unwrap();
        // `docker exec` into no such container fails at once; wait for its zombie.
        let deadline = Instant::now() + Duration::from_secs(30);
        while crate::confine::procs::stat(pid).is_none_or(|s| s.state != 'Z') {
            assert!(Instant::now() < deadline, "docker exec did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
        crate::confine::reaper::reap_adopted();
        let status = child.wait().await.expect("tokio still owns the client");
        assert_eq!(status.code(), Some(1), "{status:?}");
    }
}
