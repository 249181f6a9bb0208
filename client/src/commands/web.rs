//! `lazyboy web`: the dashboard, signed in. The daemon mints a one-time login code; this
//! prints the link (`<dashboard>/login?code=…`) and, in a terminal, opens it in the browser.
//! The browser trades it for its session cookie, so the token itself never goes into a URL.

use hyper::Method;
use lazyboy_protocol::LoginCode;

use crate::connection::Client;
use crate::daemon_proc;

pub async fn run(client: &Client, print_only: bool, json: bool) -> anyhow::Result<i32> {
    let health = daemon_proc::ensure_running(client).await?;
    let code = login_code(client).await?;
    let link = code.link(&health.url);
    if json {
        let answer = serde_json::json!({"url": link, "expires_at_ms": code.expires_at_ms});
        println!("{answer}");
        return Ok(0);
    }
    println!("{link}");
    eprintln!(
        "(a one-time login link, valid for 15 minutes: the browser that opens it stays signed in)"
    );
    if !print_only && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        open(&link);
    }
    Ok(0)
}

/// A fresh one-time login code from the running daemon.
pub async fn login_code(client: &Client) -> anyhow::Result<LoginCode> {
    Ok(client
        .call::<LoginCode>(Method::POST, "/api/auth/login", None::<&()>)
        .await?)
}

/// Opens `link` with the desktop's opener; says so when there is none.
fn open(link: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(link)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = spawned {
        eprintln!("(could not open a browser with {opener}: {error}; open the link by hand)");
    }
}
