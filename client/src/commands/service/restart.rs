//! `lazyboy daemon restart` under the service manager: when the running daemon is the
//! service's, its successor is started by the manager too (a stop through the API is a clean
//! exit, which the unit's `Restart=on-failure` and the plist's keep-alive leave alone), so
//! the daemon stays under the manager, which runs the binary its file names (after a package
//! upgrade, the new one).

use futures_util::future::BoxFuture;
use lazyboy_protocol::Health;

use super::tools::{launchctl, systemctl};
use super::{Target, wait_answering};
use crate::connection::Client;
use crate::daemon_proc::ServiceManager;
use crate::service_file::Platform;

/// This home's service manager (systemd's user manager, launchd), for `daemon_proc::restart`.
pub struct Manager;

impl ServiceManager for Manager {
    fn runs_daemon(&self, client: &Client, pid: u32) -> bool {
        runs_daemon(client, pid)
    }

    fn start_again<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, anyhow::Result<Health>> {
        Box::pin(start_again(client))
    }
}

/// Whether the daemon with `pid` is this home's service's (its manager's main process).
fn runs_daemon(client: &Client, pid: u32) -> bool {
    let Ok(target) = Target::new(client, None) else {
        return false;
    };
    if !target.file.is_file() {
        return false;
    }
    match target.platform {
        Platform::Linux => systemctl(&["show", "--property=MainPID", "--value", &target.name])
            .is_ok_and(|ran| ran.ok && ran.out.trim() == pid.to_string()),
        Platform::Macos => {
            let service = format!("gui/{}/{}", nix::unistd::getuid(), target.name);
            launchctl(&["print", &service]).is_ok_and(|ran| {
                ran.ok
                    && ran
                        .out
                        .lines()
                        .any(|line| line.trim() == format!("pid = {pid}"))
            })
        }
    }
}

/// Starts this home's service again and waits for its daemon to answer.
async fn start_again(client: &Client) -> anyhow::Result<Health> {
    let target = Target::new(client, None)?;
    match target.platform {
        Platform::Linux => {
            systemctl(&["start", &target.name])?.check()?;
        }
        Platform::Macos => {
            let service = format!("gui/{}/{}", nix::unistd::getuid(), target.name);
            launchctl(&["kickstart", &service])?.check()?;
        }
    }
    wait_answering(client, &target).await
}
