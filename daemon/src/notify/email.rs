//! The email channel: one plain-text message per notification over SMTP (lettre, rustls).
//! `smtps://` speaks TLS from the first byte; `smtp://` upgrades with STARTTLS where the
//! server offers it (`tls = "required"`: or refuses to send), `tls = "none"` only to a relay
//! on loopback. The `Message-ID` is the notification's id, the same on every retry.

use std::time::Duration;

use lazyboy_protocol::NotifyPayload;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::config::{EmailSection, EmailTls};
use super::outbox::Attempt;

/// A checked `[notify.email]`.
#[derive(Debug, Clone)]
pub struct Mailer {
    host: String,
    port: u16,
    implicit_tls: bool,
    tls: EmailTls,
    from: Mailbox,
    to: Vec<Mailbox>,
    username: Option<String>,
    password_env: Option<String>,
}

impl Mailer {
    pub fn from_section(section: &EmailSection) -> Result<Mailer, String> {
        let what = "[notify.email] smtp_url";
        let url = url::Url::parse(&section.smtp_url)
            .map_err(|e| format!("{what}: {:?} is not a URL: {e}", section.smtp_url))?;
        let implicit_tls = match url.scheme() {
            "smtps" => true,
            "smtp" => false,
            other => {
                return Err(format!(
                    "{what}: {other}:// is neither smtp:// nor smtps://"
                ));
            }
        };
        let host = url
            .host_str()
            .ok_or_else(|| format!("{what}: no host"))?
            .trim_matches(['[', ']'])
            .to_owned();
        let port = url.port().unwrap_or(if implicit_tls { 465 } else { 587 });
        if section.tls == EmailTls::None {
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if !loopback || implicit_tls {
                return Err(format!(
                    "[notify.email] tls = \"none\" sends mail and password in clear: only for \
                     smtp:// to a relay on loopback, not {host}"
                ));
            }
        }
        let mailbox = |text: &str| {
            text.parse::<Mailbox>()
                .map_err(|e| format!("[notify.email]: {text:?} is not an address: {e}"))
        };
        let to = section
            .to
            .list()
            .iter()
            .map(|t| mailbox(t))
            .collect::<Result<Vec<_>, _>>()?;
        if to.is_empty() {
            return Err("[notify.email] to: no address".into());
        }
        Ok(Mailer {
            host,
            port,
            implicit_tls,
            tls: section.tls,
            from: mailbox(&section.from)?,
            to,
            username: section.username.clone(),
            password_env: section.password_env.clone(),
        })
    }

    /// `host:port`, for status and doctor.
    pub fn target(&self) -> String {
        let scheme = if self.implicit_tls { "smtps" } else { "smtp" };
        format!("{scheme}://{}:{}", self.host, self.port)
    }

    /// The password, when one is configured and set.
    fn password(&self) -> Result<Option<String>, String> {
        match &self.password_env {
            None => Ok(None),
            Some(name) => crate::secrets::var(name)
                .filter(|v| !v.is_empty())
                .map(Some)
                .ok_or_else(|| format!("{name} (the SMTP password_env) is not set")),
        }
    }

    fn transport(&self, timeout: Duration) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
        let params = || {
            TlsParameters::new(self.host.clone()).map_err(|e| format!("TLS for {}: {e}", self.host))
        };
        let tls = if self.implicit_tls {
            Tls::Wrapper(params()?)
        } else {
            match self.tls {
                EmailTls::Starttls => Tls::Opportunistic(params()?),
                EmailTls::Required => Tls::Required(params()?),
                EmailTls::None => Tls::None,
            }
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&self.host)
            .port(self.port)
            .tls(tls)
            .timeout(Some(timeout));
        if let (Some(user), Some(password)) = (&self.username, self.password()?) {
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        Ok(builder.build())
    }

    /// Whether the server answers and the password is there (doctor: nothing is sent).
    pub async fn check(&self, timeout: Duration) -> Result<(), String> {
        let transport = self.transport(timeout)?;
        match tokio::time::timeout(timeout, transport.test_connection()).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err(format!("{} did not accept a connection", self.target())),
            Ok(Err(e)) => Err(format!("{}: {e}", self.target())),
            Err(_) => Err(format!("{} did not answer in time", self.target())),
        }
    }

    /// Sends `payload` to every recipient.
    pub async fn send(&self, payload: &NotifyPayload, text: String, timeout: Duration) -> Attempt {
        let transport = match self.transport(timeout) {
            Ok(transport) => transport,
            Err(error) => return Attempt::Fatal(error),
        };
        let mut builder = Message::builder()
            .from(self.from.clone())
            .subject(subject(payload))
            .message_id(Some(format!(
                "<{}.{}@lazyboy>",
                payload.id,
                payload.kind.as_str()
            )))
            .header(ContentType::TEXT_PLAIN);
        for to in &self.to {
            builder = builder.to(to.clone());
        }
        let message = match builder.body(text) {
            Ok(message) => message,
            Err(e) => return Attempt::Fatal(format!("cannot build the message: {e}")),
        };
        match tokio::time::timeout(timeout, transport.send(message)).await {
            Ok(Ok(_)) => Attempt::Sent,
            Ok(Err(e)) if e.is_permanent() => Attempt::Fatal(e.to_string()),
            Ok(Err(e)) => Attempt::Retry {
                error: e.to_string(),
                retry_after: None,
            },
            Err(_) => Attempt::Retry {
                error: format!(
                    "{} did not answer in {} s",
                    self.target(),
                    timeout.as_secs()
                ),
                retry_after: None,
            },
        }
    }
}

/// `[LazyBoy] <agent>: <title>` (the title without the agent's name it starts with).
fn subject(payload: &NotifyPayload) -> String {
    if payload.agent.is_empty() {
        return format!("[LazyBoy] {}", payload.title);
    }
    let rest = payload
        .title
        .strip_prefix(payload.agent.as_str())
        .unwrap_or(&payload.title)
        .trim_start_matches(':')
        .trim();
    format!("[LazyBoy] {}: {rest}", payload.agent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::config::Recipients;

    fn section(url: &str, tls: EmailTls) -> EmailSection {
        EmailSection {
            smtp_url: url.into(),
            from: "LazyBoy <lb@example.com>".into(),
            to: Recipients::One("me@example.com".into()),
            username: None,
            password_env: None,
            tls,
            kinds: None,
        }
    }

    #[test]
    fn plain_smtp_only_to_loopback_and_ports_default_by_scheme() {
        let mailer = Mailer::from_section(&section("smtps://mail.example", EmailTls::Starttls));
        assert_eq!(mailer.unwrap().target(), "smtps://mail.example:465");
        let mailer = Mailer::from_section(&section("smtp://mail.example", EmailTls::Starttls));
        assert_eq!(mailer.unwrap().target(), "smtp://mail.example:587");
        assert!(Mailer::from_section(&section("smtp://127.0.0.1:2525", EmailTls::None)).is_ok());
        let refused = Mailer::from_section(&section("smtp://mail.example:25", EmailTls::None));
        assert!(refused.unwrap_err().contains("loopback"));
        assert!(Mailer::from_section(&section("http://mail.example", EmailTls::None)).is_err());
    }

    #[test]
    fn the_subject_names_the_agent_once() {
        let mut payload = super::super::payload::test("http://h/", "n1".into(), 0);
        payload.agent = "researcher".into();
        payload.title = "researcher asks".into();
        assert_eq!(subject(&payload), "[LazyBoy] researcher: asks");
    }
}
