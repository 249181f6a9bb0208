//! Reaching the dashboard from another device: `--lan` (all interfaces) and
//! `--tls-cert`/`--tls-key` (HTTPS), shared by `lazyboy daemon start` and `service install`;
//! and the printout a person scans with their phone: for each LAN URL a one-time login link
//! (never the token itself), and a QR code of it drawn with Unicode half blocks.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::Context;
use lazyboy_protocol::{DEFAULT_WEB_PORT, Health};
use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;

use crate::cli::ReachArgs;

/// The all-interfaces address `--lan` listens on: port `$LAZYBOY_WEB_PORT`, default 8787.
pub fn lan_listen() -> anyhow::Result<SocketAddr> {
    let port = match std::env::var("LAZYBOY_WEB_PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("LAZYBOY_WEB_PORT={port:?} is not a port number"))?,
        Err(_) => DEFAULT_WEB_PORT,
    };
    Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port))
}

/// The `lazyboyd` arguments for `reach` other than `--listen`.
pub fn tls_args(reach: &ReachArgs) -> anyhow::Result<Vec<String>> {
    let (Some(cert), Some(key)) = (&reach.tls_cert, &reach.tls_key) else {
        return Ok(Vec::new());
    };
    let absolute = |path: &Path| -> anyhow::Result<String> {
        let path = std::path::absolute(path)?;
        anyhow::ensure!(path.is_file(), "{} is not a file", path.display());
        path.to_str()
            .map(str::to_owned)
            .with_context(|| format!("{} is not UTF-8", path.display()))
    };
    Ok(vec![
        "--tls-cert".into(),
        absolute(cert)?,
        "--tls-key".into(),
        absolute(key)?,
    ])
}

/// Prints a one-time login link on each LAN URL the daemon reports, and a QR code of it.
pub async fn print_lan(client: &crate::connection::Client, health: &Health) -> anyhow::Result<()> {
    if health.lan_urls.is_empty() {
        println!(
            "no network interface to reach it on besides this machine: {}",
            health.url
        );
        return Ok(());
    }
    let https = health.url.starts_with("https://");
    for url in &health.lan_urls {
        let link = crate::commands::web::login_code(client).await?.link(url);
        println!("\non the LAN: {link}\n{}", qr(&link)?);
    }
    println!(
        "(each link works once, for 15 minutes; `lazyboy daemon start --lan` again prints new \
         ones)"
    );
    if !https {
        println!(
            "plain HTTP on a LAN address is not a secure context: the phone gets the dashboard \
             but no offline app or notifications. For those, serve HTTPS: --tls-cert FILE \
             --tls-key FILE (a Tailscale or mkcert certificate)."
        );
    }
    Ok(())
}

/// The QR code of `text` in the terminal: two modules per character cell (half blocks),
/// light on dark, with its quiet zone, as phone cameras read it off a dark terminal.
pub fn qr(text: &str) -> anyhow::Result<String> {
    let code = QrCode::new(text.as_bytes()).context("cannot make a QR code of the URL")?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qr_code_is_half_blocks() {
        let code = qr("http://192.168.1.5:8787/login?code=abc").unwrap();
        let lines: Vec<&str> = code.lines().collect();
        assert!(lines.len() > 10, "{code}");
        assert!(
            code.chars()
                .all(|c| matches!(c, ' ' | '█' | '▀' | '▄' | '\n')),
            "{code}"
        );
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == width));
    }
}
