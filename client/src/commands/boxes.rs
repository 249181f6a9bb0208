//! `lazyboy box build|status|start|stop`: the box (the agents' shared Linux desktop in
//! Docker).
//!
//! `build` needs no daemon: the box's build context is embedded in this binary
//! (`build.rs`), written to a temporary directory and built there by the same `build.sh` as
//! in the repository (same content hash tag `lazyboy/box:<hash>`, then `:latest`), with
//! Docker's progress on the terminal. The other verbs ask the daemon, which owns the box.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use anyhow::Context;
use hyper::Method;
use lazyboy_protocol::BoxStatus;

use crate::cli::BoxCommand;
use crate::connection::Client;
use crate::daemon_proc;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/box_files.rs"));
}

pub async fn run(client: &Client, command: BoxCommand, json: bool) -> anyhow::Result<i32> {
    let path = match command {
        BoxCommand::Build { force } => return build(force),
        BoxCommand::Status => None,
        BoxCommand::Start => Some("/api/box/start"),
        BoxCommand::Stop => Some("/api/box/stop"),
    };
    daemon_proc::ensure_running(client).await?;
    let status: BoxStatus = match path {
        None => client.get("/api/box").await?,
        Some(path) => client.call(Method::POST, path, None::<&()>).await?,
    };
    if json {
        println!("{}", serde_json::to_string(&status)?);
    } else {
        print_status(client, &status).await;
    }
    Ok(0)
}

async fn print_status(client: &Client, status: &BoxStatus) {
    let mut out = format!("box: {}", status.state.as_str());
    if let Some(reason) = &status.reason {
        out.push_str(&format!(" ({reason})"));
    }
    out.push('\n');
    if let Some(image) = &status.image {
        out.push_str(&format!("image:     {image}\n"));
    }
    if let Some(container) = &status.container {
        out.push_str(&format!("container: {container}\n"));
    }
    let who = |h: &lazyboy_protocol::BoxHolder| {
        let task = match (&h.agent, &h.task) {
            (Some(agent), Some(task)) => format!("{agent}, task {task}"),
            _ => "no task".to_owned(),
        };
        if h.person {
            format!("a person ({task})")
        } else {
            task
        }
    };
    match &status.holder {
        Some(holder) => out.push_str(&format!("held by:   {}\n", who(holder))),
        None => out.push_str("held by:   nobody\n"),
    }
    for (n, waiting) in status.queue.iter().enumerate() {
        out.push_str(&format!("waiting {}: {}\n", n + 1, who(waiting)));
    }
    if let Some(novnc) = &status.novnc {
        let base = crate::daemon_proc::health(client)
            .await
            .map(|h| h.url)
            .unwrap_or_default();
        out.push_str(&format!(
            "watch or take over: {}{}\n",
            base.trim_end_matches('/'),
            novnc
        ));
    }
    print!("{out}");
}

/// Writes the embedded build context to a temporary directory and runs its `build.sh`.
fn build(force: bool) -> anyhow::Result<i32> {
    let dir = std::env::temp_dir().join(format!("lazyboy-box-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, mode, bytes) in embedded::FILES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let mut file = std::fs::File::create(&target)
            .with_context(|| format!("writing {}", target.display()))?;
        file.write_all(bytes)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(*mode))?;
    }
    // Directories as the checkout has them (the image's hash covers their modes).
    for entry in walk_dirs(&dir.join("rootfs")) {
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o755))?;
    }
    let mut command = std::process::Command::new("bash");
    command.arg(dir.join("build.sh"));
    if force {
        command.arg("--force");
    }
    let status = command
        .status()
        .context("cannot run bash for the box's build.sh")?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(status.code().unwrap_or(1))
}

fn walk_dirs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_owned()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk_dirs(&entry.path()));
            }
        }
    }
    out
}
