//! `[notify]` in `config.toml`: where notifications go and which kinds each channel wants.
//!
//! ```toml
//! [notify]
//! public_url = "https://lazyboy.example"   # links in notifications (default: --lan, else loopback)
//! allow_hosts = ["push.lan:8443"]          # push endpoints that are not public (http allowed)
//! vapid_subject = "mailto:me@example.com"  # the contact push services see
//! retry_base_ms = 15000                    # retries after 1, 3, 9, 27 times this (5 attempts)
//!
//! [notify.web_push]
//! kinds = ["question", "approval", "takeover", "ended"]   # the default
//!
//! [notify.ntfy]
//! url = "https://ntfy.sh/my-topic"
//! token_env = "NTFY_TOKEN"                 # the NAME of the variable holding the token
//!
//! [notify.webhook]
//! url = "https://hooks.example/lazyboy"
//! secret_env = "LAZYBOY_WEBHOOK_SECRET"    # signs the body (X-LazyBoy-Signature)
//!
//! [notify.email]
//! smtp_url = "smtp://mail.example:587"     # or smtps://…:465
//! from = "LazyBoy <lazyboy@example.com>"
//! to = ["me@example.com"]
//! username = "lazyboy"
//! password_env = "SMTP_PASSWORD"
//! tls = "starttls"                         # "none" only for a relay on loopback
//! ```
//!
//! Secrets are named by variable, never written here; the daemon takes them out of its
//! environment at start like the providers' keys (`secrets`).

use std::time::Duration;

use lazyboy_protocol::NotifyKind;
use serde::Deserialize;

/// `[notify]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySection {
    pub public_url: Option<String>,
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    pub vapid_subject: Option<String>,
    pub retry_base_ms: Option<u64>,
    /// One attempt's deadline, connection included (default 10 s).
    pub timeout_secs: Option<u64>,
    #[serde(default)]
    pub web_push: WebPushSection,
    pub ntfy: Option<NtfySection>,
    pub webhook: Option<WebhookSection>,
    pub email: Option<EmailSection>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebPushSection {
    pub kinds: Option<Vec<NotifyKind>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NtfySection {
    pub url: String,
    pub token_env: Option<String>,
    pub kinds: Option<Vec<NotifyKind>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSection {
    pub url: String,
    pub secret_env: Option<String>,
    pub kinds: Option<Vec<NotifyKind>>,
}

/// One address or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Recipients {
    One(String),
    Many(Vec<String>),
}

impl Recipients {
    pub fn list(&self) -> Vec<String> {
        match self {
            Recipients::One(one) => vec![one.clone()],
            Recipients::Many(many) => many.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EmailTls {
    /// STARTTLS where the server offers it (`smtp://`), TLS from the first byte (`smtps://`).
    #[default]
    Starttls,
    /// STARTTLS or nothing is sent.
    Required,
    /// Plain SMTP: only for a relay on this machine.
    None,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailSection {
    pub smtp_url: String,
    pub from: String,
    pub to: Recipients,
    pub username: Option<String>,
    pub password_env: Option<String>,
    #[serde(default)]
    pub tls: EmailTls,
    pub kinds: Option<Vec<NotifyKind>>,
}

impl NotifySection {
    /// What serde cannot check here: URLs parse, hosts are `host[:port]`. The email relay's
    /// addresses are `email.rs`'s to check ([`crate::notify::check`] does both), so that this
    /// file, below every channel, names none of them.
    pub fn check_urls(&self) -> Result<(), String> {
        crate::web::policy::AllowList::parse(&self.allow_hosts)
            .map_err(|e| e.replace("[web]", "[notify]"))?;
        if let Some(url) = &self.public_url {
            http_url(url, "[notify] public_url")?;
        }
        if let Some(ntfy) = &self.ntfy {
            http_url(&ntfy.url, "[notify.ntfy] url")?;
        }
        if let Some(hook) = &self.webhook {
            http_url(&hook.url, "[notify.webhook] url")?;
        }
        Ok(())
    }

    /// The variable names holding this section's secrets.
    pub fn secret_env(&self) -> Vec<String> {
        let ntfy = self.ntfy.as_ref().and_then(|n| n.token_env.clone());
        let hook = self.webhook.as_ref().and_then(|w| w.secret_env.clone());
        let mail = self.email.as_ref().and_then(|e| e.password_env.clone());
        [ntfy, hook, mail].into_iter().flatten().collect()
    }

    /// The first retry's delay; later ones triple it.
    pub fn retry_base(&self) -> Duration {
        Duration::from_millis(self.retry_base_ms.unwrap_or(15_000).max(1))
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.unwrap_or(10).max(1))
    }
}

fn http_url(text: &str, what: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| format!("{what}: {text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{what}: {text:?} must be http:// or https://"));
    }
    Ok(url)
}

/// The kinds a channel sends: its own list, else the default.
pub fn kinds(list: Option<&Vec<NotifyKind>>) -> Vec<NotifyKind> {
    list.cloned()
        .unwrap_or_else(|| NotifyKind::DEFAULT.to_vec())
}
