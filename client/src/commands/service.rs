//! `lazyboy service install|uninstall|status`: run the home's daemon under the platform's
//! service manager (a systemd user unit on Linux, a launchd agent on macOS), so it starts at
//! login and comes back after a crash.
//!
//! The file comes from [`crate::service_file`] and is written first, then loaded with the
//! platform's tool (`systemctl --user`, `launchctl`). If loading fails (no tool, no user
//! manager: a container, a session without systemd) the file stays, and the command fails
//! saying where it is and how to load it. `LAZYBOY_SERVICE_DIR` overrides where the file goes.
//!
//! The home admits one daemon (its lock). Install therefore stops a daemon running on the home
//! outside the service (gracefully, by API; its unfinished tasks recover in the service's
//! daemon) right before the service starts, and says so. Uninstall stops the service's daemon
//! and removes the file; both are idempotent.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use lazyboy_protocol::{Health, paths};

use crate::cli::{ServiceCommand, ServiceInstallArgs};
use crate::connection::Client;
use crate::daemon_proc;
use crate::service_file::{self, Platform, Spec};

mod restart;
mod tools;
pub use restart::Manager;
use tools::{launchctl, systemctl};

/// How long install waits for the service's daemon to answer.
const ANSWER_DEADLINE: Duration = Duration::from_secs(20);
/// How long install waits for launchd to unload a previous agent.
const UNLOAD_DEADLINE: Duration = Duration::from_secs(10);

pub async fn run(client: &Client, command: ServiceCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        ServiceCommand::Install(args) => install(client, args).await,
        ServiceCommand::Uninstall { platform } => uninstall(&Target::new(client, platform)?),
        ServiceCommand::Status { platform } => {
            status(client, &Target::new(client, platform)?, json).await
        }
    }
}

/// Whether this home's service file exists on this machine, and where it is (for `doctor`).
pub fn installed(client: &Client) -> anyhow::Result<(bool, PathBuf)> {
    let target = Target::new(client, None)?;
    Ok((target.file.is_file(), target.file))
}

/// One home's service: its platform, name and file.
struct Target {
    platform: Platform,
    home: PathBuf,
    /// The unit name (`lazyboyd.service`) or launchd label (`com.lazyboy.daemon`).
    name: String,
    file: PathBuf,
}

impl Target {
    fn new(client: &Client, platform: Option<Platform>) -> anyhow::Result<Target> {
        let platform = platform.unwrap_or_else(Platform::host);
        let home = std::path::absolute(client.home())
            .with_context(|| format!("cannot resolve {}", client.home().display()))?;
        let default_home = paths::default_home().and_then(|d| std::path::absolute(d).ok());
        let name = service_file::service_name(platform, &home, default_home.as_deref());
        let file = service_dir(platform)?.join(service_file::file_name(platform, &name));
        Ok(Target {
            platform,
            home,
            name,
            file,
        })
    }

    /// Whether this machine's tool can load it.
    fn on_host(&self) -> bool {
        self.platform == Platform::host()
    }

    /// The command a user runs to load the written file.
    fn load_hint(&self) -> String {
        match self.platform {
            Platform::Linux => format!(
                "systemctl --user daemon-reload && systemctl --user enable --now {}",
                self.name
            ),
            Platform::Macos => format!(
                "launchctl bootstrap gui/$(id -u) {}",
                shell_quote(&self.file.display().to_string())
            ),
        }
    }

    /// Where to look when the daemon does not come up.
    fn logs_hint(&self) -> String {
        let log = self.home.join(paths::LOGS).join("lazyboyd.log");
        match self.platform {
            Platform::Linux => format!(
                "systemctl --user status {0}, journalctl --user -u {0}, {1}",
                self.name,
                log.display()
            ),
            Platform::Macos => format!(
                "{}, {}",
                self.home.join(paths::LOGS).join("lazyboyd.err").display(),
                log.display()
            ),
        }
    }
}

/// `LAZYBOY_SERVICE_DIR`, else `$XDG_CONFIG_HOME/systemd/user` (default
/// `~/.config/systemd/user`) or `~/Library/LaunchAgents`.
fn service_dir(platform: Platform) -> anyhow::Result<PathBuf> {
    let from_env = |key| {
        std::env::var_os(key)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = from_env("LAZYBOY_SERVICE_DIR") {
        return Ok(dir);
    }
    let user_home = || dirs::home_dir().context("no home directory: set HOME");
    Ok(match platform {
        Platform::Linux => match from_env("XDG_CONFIG_HOME") {
            Some(config) => config,
            None => user_home()?.join(".config"),
        }
        .join("systemd/user"),
        Platform::Macos => user_home()?.join("Library/LaunchAgents"),
    })
}

async fn install(client: &Client, args: ServiceInstallArgs) -> anyhow::Result<i32> {
    let target = Target::new(client, args.platform)?;
    let tls = crate::reach::tls_args(&args.reach)?;
    let spec = Spec {
        daemon: daemon_proc::daemon_path()?,
        home: target.home.clone(),
        listen: match args.reach.lan {
            true => Some(crate::reach::lan_listen()?),
            false => args.listen,
        },
        tls: match tls.as_slice() {
            [_, cert, _, key] => Some((cert.into(), key.into())),
            _ => None,
        },
        path_env: std::env::var("PATH").ok().filter(|p| !p.is_empty()),
    };
    let text = service_file::render(target.platform, &spec, &target.name)?;
    if args.print {
        print!("{text}");
        return Ok(0);
    }
    // launchd opens the log files itself and does not create their directory.
    let logs = target.home.join(paths::LOGS);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&logs)
        .with_context(|| format!("cannot create {}", logs.display()))?;
    write_file(&target.file, &text)?;
    println!("wrote {}", target.file.display());
    if args.no_load {
        println!("not loaded (--no-load); to load it: {}", target.load_hint());
        return Ok(0);
    }
    if !target.on_host() {
        bail!(
            "wrote {}, but a {} service cannot be loaded on this machine",
            target.file.display(),
            target.platform
        );
    }
    let loaded = match target.platform {
        Platform::Linux => load_systemd(client, &target).await,
        Platform::Macos => load_launchd(client, &target).await,
    };
    if let Err(error) = loaded {
        bail!(
            "wrote {}, but could not load it: {error:#}\nto load it: {}",
            target.file.display(),
            target.load_hint()
        );
    }
    let health = wait_answering(client, &target).await?;
    println!(
        "{} loaded: lazyboyd {} running (pid {})\nhome:      {}\ndashboard: {}",
        target.name, health.version, health.pid, health.home, health.url
    );
    let login = super::web::login_code(client).await?;
    println!("login:     {}", login.link(&health.url));
    if args.reach.lan {
        crate::reach::print_lan(client, &health).await?;
    }
    println!(
        "The service does not see this shell's environment: keep model settings in {} and \
         give provider keys to the service manager (see the README).",
        target.home.join("config.toml").display()
    );
    Ok(0)
}

/// `daemon-reload` (which fails when there is no user manager), then enable and (re)start.
async fn load_systemd(client: &Client, target: &Target) -> anyhow::Result<()> {
    systemctl(&["daemon-reload"])?.check()?;
    let main_pid = systemctl(&["show", "--property=MainPID", "--value", &target.name])?
        .out
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|pid| *pid != 0);
    stop_outside_daemon(client, main_pid).await?;
    systemctl(&["enable", &target.name])?.check()?;
    // `restart`, not `start`: a reinstall must run the new file.
    systemctl(&["restart", &target.name])?.check()?;
    Ok(())
}

/// Unloads a previous agent of the same label (a reinstall), then bootstraps the file.
async fn load_launchd(client: &Client, target: &Target) -> anyhow::Result<()> {
    let domain = format!("gui/{}", nix::unistd::getuid());
    let service = format!("{domain}/{}", target.name);
    if launchctl(&["bootout", &service])?.ok {
        // bootout returns before the agent is gone; bootstrap fails until it is.
        let deadline = Instant::now() + UNLOAD_DEADLINE;
        while launchctl(&["print", &service])?.ok {
            if Instant::now() > deadline {
                bail!("{service} is still loaded {UNLOAD_DEADLINE:?} after bootout");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    stop_outside_daemon(client, None).await?;
    // A label disabled earlier (`launchctl disable`) would refuse to bootstrap.
    launchctl(&["enable", &service])?;
    let file = target.file.display().to_string();
    launchctl(&["bootstrap", &domain, &file])?.check()?;
    Ok(())
}

/// Stops a daemon that answers on the home unless it is the service's own (`service_pid`).
async fn stop_outside_daemon(client: &Client, service_pid: Option<u32>) -> anyhow::Result<()> {
    let Ok(health) = client.get::<Health>("/api/health").await else {
        return Ok(());
    };
    if Some(health.pid) == service_pid {
        return Ok(());
    }
    daemon_proc::stop(client).await?;
    println!(
        "stopped lazyboyd (pid {}), which ran outside the service: a home runs one daemon",
        health.pid
    );
    Ok(())
}

/// Waits for the service's daemon to answer with a matching protocol.
async fn wait_answering(client: &Client, target: &Target) -> anyhow::Result<Health> {
    let deadline = Instant::now() + ANSWER_DEADLINE;
    loop {
        if client.get::<Health>("/api/health").await.is_ok() {
            return daemon_proc::health(client).await;
        }
        if Instant::now() > deadline {
            bail!(
                "{} is loaded but lazyboyd did not answer within {}s; see {}",
                target.name,
                ANSWER_DEADLINE.as_secs(),
                target.logs_hint()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn uninstall(target: &Target) -> anyhow::Result<i32> {
    let existed = target.file.exists();
    // Unload while the file is still there (`disable` needs it).
    let unreachable = if target.on_host() {
        match target.platform {
            Platform::Linux => unload_systemd(target)?,
            Platform::Macos => unload_launchd(target)?,
        }
    } else {
        None
    };
    if existed {
        std::fs::remove_file(&target.file)
            .with_context(|| format!("cannot remove {}", target.file.display()))?;
        println!("removed {}", target.file.display());
        if target.on_host() && target.platform == Platform::Linux && unreachable.is_none() {
            systemctl(&["daemon-reload"])?;
        }
    } else {
        println!(
            "{} is not installed (no {})",
            target.name,
            target.file.display()
        );
    }
    if let Some(why) = unreachable {
        println!("the service manager could not be reached, so nothing was stopped: {why}");
    }
    Ok(0)
}

/// Stops and disables the unit; "not loaded" is fine. `Ok(Some(why))` when there is no user
/// manager to ask (nothing can be running under it then).
fn unload_systemd(target: &Target) -> anyhow::Result<Option<String>> {
    let unit = target.name.as_str();
    let stop = match systemctl(&["stop", unit]) {
        Ok(stop) => stop,
        Err(error) => return Ok(Some(format!("{error:#}"))),
    };
    systemctl(&["disable", unit])?;
    systemctl(&["reset-failed", unit])?;
    let state = systemctl(&["is-active", unit])?;
    match state.out.trim() {
        "" => Ok(Some(first_line(&state.err).to_owned())),
        "active" | "activating" | "deactivating" | "reloading" => {
            bail!("could not stop {unit}: {}", first_line(&stop.err))
        }
        _ => Ok(None),
    }
}

/// Boots the agent out; "not loaded" is fine.
fn unload_launchd(target: &Target) -> anyhow::Result<Option<String>> {
    let service = format!("gui/{}/{}", nix::unistd::getuid(), target.name);
    let bootout = match launchctl(&["bootout", &service]) {
        Ok(bootout) => bootout,
        Err(error) => return Ok(Some(format!("{error:#}"))),
    };
    if !bootout.ok && launchctl(&["print", &service])?.ok {
        bail!("could not unload {service}: {}", first_line(&bootout.err));
    }
    Ok(None)
}

async fn status(client: &Client, target: &Target, json: bool) -> anyhow::Result<i32> {
    let installed = target.file.is_file();
    let manager = if target.on_host() {
        match target.platform {
            Platform::Linux => systemd_view(target),
            Platform::Macos => launchd_view(target),
        }
    } else {
        "not this machine's platform".to_owned()
    };
    let daemon_pid = client
        .get::<Health>("/api/health")
        .await
        .ok()
        .map(|h| h.pid);
    if json {
        let status = serde_json::json!({
            "platform": target.platform,
            "service": target.name,
            "file": target.file,
            "installed": installed,
            "manager": manager,
            "daemon_pid": daemon_pid,
        });
        println!("{status}");
    } else {
        println!(
            "service: {}\nfile:    {} ({})\nmanager: {}\ndaemon:  {}",
            target.name,
            target.file.display(),
            if installed {
                "installed"
            } else {
                "not installed"
            },
            manager,
            match daemon_pid {
                Some(pid) => format!("running (pid {pid})"),
                None => "not running".to_owned(),
            }
        );
    }
    Ok(if installed { 0 } else { 3 })
}

/// `active, enabled` and the like, or why the manager could not be asked.
fn systemd_view(target: &Target) -> String {
    let ask = |verb| systemctl(&[verb, &target.name]);
    match (ask("is-active"), ask("is-enabled")) {
        (Ok(active), _) if active.out.trim().is_empty() => {
            format!("unavailable: {}", first_line(&active.err))
        }
        // is-enabled says nothing (on stdout) about a unit file that does not exist.
        (Ok(active), Ok(enabled)) => match enabled.out.trim() {
            "" => active.out.trim().to_owned(),
            enabled => format!("{}, {enabled}", active.out.trim()),
        },
        (Err(error), _) | (_, Err(error)) => format!("unavailable: {error:#}"),
    }
}

/// `loaded (state = running)`, `not loaded`, or why launchctl could not be asked.
fn launchd_view(target: &Target) -> String {
    let service = format!("gui/{}/{}", nix::unistd::getuid(), target.name);
    match launchctl(&["print", &service]) {
        Ok(print) if print.ok => {
            let state = print
                .out
                .lines()
                .map(str::trim)
                .find(|line| line.starts_with("state = "))
                .unwrap_or("state unknown");
            format!("loaded ({state})")
        }
        Ok(_) => "not loaded".to_owned(),
        Err(error) => format!("unavailable: {error:#}"),
    }
}

/// Writes through a temp file and a rename, so a crash never leaves half a unit.
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("the service file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or("")
}

/// `text` quoted for a POSIX shell when it needs it (a hint the user pastes).
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_for_hints() {
        assert_eq!(shell_quote("/a/b.plist"), "/a/b.plist");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }
}
