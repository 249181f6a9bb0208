//! `lazyboy daemon start|restart|stop|status|token`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use anyhow::Context;
use hyper::Method;
use lazyboy_protocol::{DaemonToken, Health, TokenRequest, paths};

use crate::cli::DaemonCommand;
use crate::connection::{Client, ClientError};
use crate::daemon_proc;

pub async fn run(client: &Client, command: DaemonCommand, json: bool) -> anyhow::Result<i32> {
    match command {
        DaemonCommand::Start { node, reach } => {
            let args = start_args(node, &reach)?;
            let health = match client.get::<Health>("/api/health").await {
                Ok(_) => {
                    let health = daemon_proc::health(client).await?;
                    let want_tls = reach.tls_cert.is_some();
                    if (reach.lan && health.lan_urls.is_empty())
                        || (want_tls && !health.url.starts_with("https://"))
                    {
                        anyhow::bail!(
                            "lazyboyd is already running (pid {}) at {}: stop it first                              (`lazyboy daemon stop`) to start it with --lan or HTTPS",
                            health.pid,
                            health.url
                        );
                    }
                    health
                }
                Err(ClientError::NotRunning { .. }) => {
                    daemon_proc::start_with(client, &args).await?
                }
                Err(other) => return Err(other.into()),
            };
            print_health(&health, json)?;
            if !json {
                let login = super::web::login_code(client).await?;
                println!("login:     {}", login.link(&health.url));
                if reach.lan {
                    crate::reach::print_lan(client, &health).await?;
                }
            }
        }
        DaemonCommand::Restart { node, reach, wait } => {
            let args = start_args(node, &reach)?;
            let health = daemon_proc::restart(
                client,
                args,
                std::time::Duration::from_secs(wait),
                &super::service::Manager,
            )
            .await?;
            print_health(&health, json)?;
            if !json && reach.lan {
                crate::reach::print_lan(client, &health).await?;
            }
        }
        DaemonCommand::Stop => match daemon_proc::stop(client).await? {
            Some(health) => println!("lazyboyd (pid {}) stopped", health.pid),
            None => println!("lazyboyd is not running"),
        },
        DaemonCommand::Status => match daemon_proc::health(client).await {
            Ok(health) => print_health(&health, json)?,
            Err(error) => match error.downcast_ref::<ClientError>() {
                Some(ClientError::NotRunning { .. }) => {
                    println!("{error}");
                    return Ok(3);
                }
                _ => return Err(error),
            },
        },
        DaemonCommand::Token { rotate } => println!("{}", token(client, rotate).await?),
    }
    Ok(0)
}

/// The `lazyboyd` arguments `start` and `restart` pass on for their flags.
fn start_args(node: Option<String>, reach: &crate::cli::ReachArgs) -> anyhow::Result<Vec<String>> {
    let mut args = crate::reach::tls_args(reach)?;
    if let Some(node) = node {
        args.extend(["--node".to_owned(), node]);
    }
    if reach.lan {
        let listen = crate::reach::lan_listen()?.to_string();
        args.splice(0..0, ["--listen".to_owned(), listen]);
    }
    Ok(args)
}

fn print_health(health: &Health, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(health)?);
    } else {
        println!(
            "lazyboyd {} running (pid {})\nhome:      {}\ndashboard: {}\nnode:      {}",
            lazyboy_protocol::build_name(&health.version, &health.commit),
            health.pid,
            health.home,
            health.url,
            health.node
        );
        for url in &health.lan_urls {
            println!("lan:       {url}");
        }
        if !health.sandbox.is_empty() {
            println!("sandbox:   {}", health.sandbox);
        }
    }
    Ok(())
}

/// The API's token. A running daemon owns its home, so it is asked (and
/// rotates the token in force at once); with none running, `<home>/token` is read here, or a
/// new random one written (mode 0600) if absent or when rotating. No daemon is started.
pub(crate) async fn token(client: &Client, rotate: bool) -> anyhow::Result<String> {
    let request = TokenRequest { rotate };
    match client
        .call::<DaemonToken>(Method::POST, "/api/daemon/token", Some(&request))
        .await
    {
        Ok(answer) => Ok(answer.token),
        Err(ClientError::NotRunning { .. }) => token_file(client, rotate),
        // A daemon older than this route (same protocol otherwise): writing the file behind
        // its back is what left a rotated token ignored, so say what to do instead.
        Err(ClientError::Api { status, .. }) if status == hyper::StatusCode::NOT_FOUND => {
            anyhow::bail!(
                "the running lazyboyd cannot give or rotate its token; restart it with this \
                 version (`lazyboy daemon stop && lazyboy daemon start`)"
            )
        }
        Err(other) => Err(other.into()),
    }
}

/// `token` with no daemon running.
fn token_file(client: &Client, rotate: bool) -> anyhow::Result<String> {
    let path = client.home().join(paths::TOKEN);
    if !rotate
        && let Ok(existing) = std::fs::read_to_string(&path)
        && !existing.trim().is_empty()
    {
        return Ok(existing.trim().to_owned());
    }
    std::fs::create_dir_all(client.home())?;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .context("cannot read /dev/urandom")?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(file, "{token}")?;
    Ok(token)
}
