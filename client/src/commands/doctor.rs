//! `lazyboy doctor`: one line per check, with what to do about anything that is not fine;
//! exit code 1 if a check fails (a `warn` is something optional left unset).
//!
//! The daemon checks what only it can (the config on disk, the model, each MCP server, web
//! search, and the sandbox's layers and cgroups: `GET /api/doctor`); this side checks the
//! machine: where the binaries were found (and whether the running daemon is this CLI's
//! build), Docker, the box image, and the login service (whose unit must delegate its
//! cgroup to the daemon). A daemon that cannot start is itself a failed check, and the
//! machine's checks still run.

use std::process::{Command, Stdio};

use lazyboy_protocol::{CheckStatus, DoctorCheck, DoctorReport, Health, build_name};

use crate::connection::Client;
use crate::daemon_proc;
use crate::render::clean;

/// The image the box runs (see `box/`).
pub const BOX_IMAGE: &str = "lazyboy/box:latest";
/// The label naming the image's contract with the daemon, and the contract this CLI's
/// daemon needs (no published ports: `box/README.md`).
const BOX_API_LABEL: &str = "lazyboy.box.api";
const BOX_API: u32 = 2;

pub async fn run(client: &Client, json: bool) -> anyhow::Result<i32> {
    let running = daemon_proc::ensure_running(client).await;
    let mut checks = vec![binaries(running.as_ref().ok())];
    checks.extend(match running {
        Ok(_) => match client.get::<DoctorReport>("/api/doctor").await {
            Ok(report) => report.checks,
            Err(error) => vec![fail(
                "daemon",
                format!("cannot ask the daemon: {error}"),
                "restart it: lazyboy daemon stop && lazyboy daemon start",
            )],
        },
        Err(error) => vec![fail(
            "daemon",
            format!("cannot start: {error:#}"),
            &format!(
                "fix what the message says (a malformed config.toml is the usual cause), or run \
                 lazyboyd --home {} in a terminal to see why",
                client.home().display()
            ),
        )],
    });
    let docker = docker();
    let docker_ok = docker.status == CheckStatus::Ok;
    checks.push(docker);
    checks.push(box_image(docker_ok));
    checks.push(service(client));
    let failed = checks.iter().any(|c| c.status == CheckStatus::Fail);
    if json {
        println!("{}", serde_json::to_string(&DoctorReport { checks })?);
    } else {
        for check in &checks {
            print!("{}", line(check));
        }
    }
    Ok(if failed { 1 } else { 0 })
}

/// `ok    model: ...` and, for anything else, `      → what to do`.
fn line(check: &DoctorCheck) -> String {
    let word = match check.status {
        CheckStatus::Ok => "ok  ",
        CheckStatus::Warn => "warn",
        CheckStatus::Fail => "FAIL",
    };
    let mut out = format!("{word}  {}: {}\n", check.name, clean(&check.detail));
    if let Some(fix) = &check.fix {
        out.push_str(&format!("      → {}\n", clean(fix)));
    }
    out
}

fn fail(name: &str, detail: String, fix: &str) -> DoctorCheck {
    DoctorCheck {
        name: name.to_owned(),
        status: CheckStatus::Fail,
        detail,
        fix: Some(fix.to_owned()),
    }
}

fn ok(name: &str, detail: String) -> DoctorCheck {
    DoctorCheck {
        name: name.to_owned(),
        status: CheckStatus::Ok,
        detail,
        fix: None,
    }
}

/// Where each binary was found (every install path keeps them side by side), and whether the
/// running daemon is the build this CLI is: after an upgrade it is not, until restarted.
fn binaries(running: Option<&Health>) -> DoctorCheck {
    let this = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "?".into());
    let mine = build_name(env!("CARGO_PKG_VERSION"), crate::app::commit());
    let (daemon, how) = daemon_proc::daemon_found();
    let daemon_text = match &daemon {
        Some(path) => format!("{} ({how})", path.display()),
        None => format!("not found ({how})"),
    };
    let helper = daemon
        .as_ref()
        .and_then(|path| {
            let name = path.file_name()?.to_str()?;
            let helper = path.with_file_name(name.replacen("lazyboyd", "lazyboy-sandbox", 1));
            helper.is_file().then_some(helper)
        })
        .map_or_else(
            || "not beside lazyboyd (it confines commands with itself, slower)".to_owned(),
            |p| p.display().to_string(),
        );
    let mut detail =
        format!("lazyboy {this} ({mine}); lazyboyd {daemon_text}; lazyboy-sandbox {helper}");
    if daemon.is_none() {
        return fail(
            "binaries",
            detail,
            "put lazyboyd beside lazyboy (every package does), on PATH, or name it in \
             LAZYBOY_DAEMON_BIN",
        );
    }
    match running {
        Some(health) => {
            let theirs = build_name(&health.version, &health.commit);
            detail.push_str(&format!("; running: lazyboyd {theirs}, pid {}", health.pid));
            if theirs != mine {
                return DoctorCheck {
                    name: "binaries".into(),
                    status: CheckStatus::Warn,
                    detail,
                    fix: Some(
                        "the running daemon is another build than this CLI (an upgrade?): \
                         lazyboy daemon restart"
                            .into(),
                    ),
                };
            }
            ok("binaries", detail)
        }
        None => ok("binaries", detail),
    }
}

/// Runs a program quietly: `None` if it could not be started at all.
fn quietly(program: &str, args: &[&str]) -> Option<std::process::Output> {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
}

fn docker() -> DoctorCheck {
    match quietly("docker", &["version", "--format", "{{.Server.Version}}"]) {
        None => fail(
            "docker",
            "Docker is not installed (no `docker` on PATH)".into(),
            "install Docker Engine (Debian/Ubuntu: apt-get install docker.io) and add yourself \
             to the docker group; the box (the agents' desktop) runs in it",
        ),
        Some(out) if out.status.success() => ok(
            "docker",
            format!("Docker {}", String::from_utf8_lossy(&out.stdout).trim()),
        ),
        Some(out) => fail(
            "docker",
            format!(
                "Docker is installed but its daemon does not answer: {}",
                first_line(&out.stderr)
            ),
            "start it (sudo systemctl start docker) and make sure you are in the docker group",
        ),
    }
}

fn box_image(docker_ok: bool) -> DoctorCheck {
    if !docker_ok {
        return fail(
            "box image",
            format!("{BOX_IMAGE}: not checked, Docker is not usable"),
            "fix Docker first, then build the box image (see box/README.md)",
        );
    }
    let format = format!("{{{{.Id}}}} {{{{index .Config.Labels \"{BOX_API_LABEL}\"}}}}");
    match quietly(
        "docker",
        &["image", "inspect", "--format", &format, BOX_IMAGE],
    ) {
        Some(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let (id, api) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
            if api.trim().parse::<u32>().unwrap_or(0) < BOX_API {
                return fail(
                    "box image",
                    format!(
                        "{BOX_IMAGE} ({id}) is older than this version (it publishes the \
                         browser's and the screen's ports)"
                    ),
                    "rebuild it: `lazyboy box build --force` (or box/build.sh)",
                );
            }
            ok("box image", format!("{BOX_IMAGE} ({id})"))
        }
        _ => fail(
            "box image",
            format!("{BOX_IMAGE} is not built"),
            "lazyboy box build (the image's files are inside lazyboy; see box/README.md)",
        ),
    }
}

fn service(client: &Client) -> DoctorCheck {
    match super::service::installed(client) {
        // A unit written before the daemon put tasks in cgroups lacks the delegation.
        Ok((true, file))
            if file.extension().is_some_and(|e| e == "service")
                && std::fs::read_to_string(&file)
                    .is_ok_and(|unit| !unit.contains("Delegate=yes")) =>
        {
            DoctorCheck {
                name: "service".to_owned(),
                status: CheckStatus::Warn,
                detail: format!(
                    "installed ({}) without Delegate=yes: the daemon it starts cannot give \
                     each task a cgroup",
                    file.display()
                ),
                fix: Some("lazyboy service install (writes the current unit)".to_owned()),
            }
        }
        Ok((true, file)) => ok("service", format!("installed ({})", file.display())),
        Ok((false, file)) => fail(
            "service",
            format!("not installed ({} does not exist)", file.display()),
            "lazyboy service install (the daemon then starts at login and after a crash)",
        ),
        Err(error) => fail(
            "service",
            format!("cannot tell: {error:#}"),
            "lazyboy service status shows what is wrong",
        ),
    }
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}
