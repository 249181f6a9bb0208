//! The configured channels and how each sends: ntfy and the webhook here (one POST each,
//! to URLs the person wrote in `config.toml`), Web Push in `web_push.rs`, email in
//! `email.rs`. A channel is named `ntfy`, `webhook`, `email` or `web_push:<subscription>`.

use std::sync::Arc;
use std::time::Duration;

use lazyboy_protocol::{NotifyKind, NotifyPayload};
use ring::hmac;

use super::config::{NotifySection, NtfySection, WebhookSection, kinds};
use super::email::Mailer;
use super::outbox::Attempt;
use super::payload;
use super::vapid::Vapid;
use super::web_push::Pusher;
use crate::store::SubscriptionRow;
use crate::web::Resolve;
use crate::web::policy::AllowList;

/// The prefix of a Web Push channel's name.
pub const WEB_PUSH: &str = "web_push";

/// Every channel this daemon sends to, from `[notify]`.
pub struct Channels {
    pub web_push_kinds: Vec<NotifyKind>,
    pub ntfy: Option<(NtfySection, Vec<NotifyKind>)>,
    pub webhook: Option<(WebhookSection, Vec<NotifyKind>)>,
    pub email: Option<(Mailer, Vec<NotifyKind>)>,
    pub allow: AllowList,
    pub timeout: Duration,
    pub vapid: Arc<Vapid>,
    pub subject: String,
    pub resolver: Arc<dyn Resolve>,
    /// For the person's own URLs (ntfy, webhook): no redirects, a deadline.
    client: reqwest::Client,
}

impl Channels {
    pub fn new(
        section: &NotifySection,
        vapid: Arc<Vapid>,
        resolver: Arc<dyn Resolve>,
    ) -> Result<Channels, String> {
        // The email relay is checked by `Mailer::from_section` below.
        section.check_urls()?;
        let timeout = section.timeout();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(super::USER_AGENT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Channels {
            web_push_kinds: kinds(section.web_push.kinds.as_ref()),
            ntfy: section
                .ntfy
                .clone()
                .map(|n| (n.clone(), kinds(n.kinds.as_ref()))),
            webhook: section
                .webhook
                .clone()
                .map(|w| (w.clone(), kinds(w.kinds.as_ref()))),
            email: match &section.email {
                Some(email) => Some((Mailer::from_section(email)?, kinds(email.kinds.as_ref()))),
                None => None,
            },
            allow: AllowList::parse(&section.allow_hosts)?,
            timeout,
            vapid,
            subject: section
                .vapid_subject
                .clone()
                .unwrap_or_else(|| "mailto:lazyboy@localhost".to_owned()),
            resolver,
            client,
        })
    }

    /// The channels (other than Web Push) that want `kind`.
    pub fn fixed_for(&self, kind: NotifyKind) -> Vec<&'static str> {
        let wants = |k: &Vec<NotifyKind>| kind == NotifyKind::Test || k.contains(&kind);
        let mut names = Vec::new();
        if self.ntfy.as_ref().is_some_and(|(_, k)| wants(k)) {
            names.push("ntfy");
        }
        if self.webhook.as_ref().is_some_and(|(_, k)| wants(k)) {
            names.push("webhook");
        }
        if self.email.as_ref().is_some_and(|(_, k)| wants(k)) {
            names.push("email");
        }
        names
    }

    /// Every channel that wants `kind`, given the subscriptions.
    pub fn for_kind(&self, kind: NotifyKind, subs: &[SubscriptionRow]) -> Vec<String> {
        let mut names: Vec<String> = self
            .fixed_for(kind)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if kind == NotifyKind::Test || self.web_push_kinds.contains(&kind) {
            names.extend(subs.iter().map(|s| format!("{WEB_PUSH}:{}", s.id)));
        }
        names
    }

    /// One attempt on the channel `name`; `sub` for a Web Push channel.
    pub async fn send(
        &self,
        name: &str,
        sub: Option<&SubscriptionRow>,
        payload: &NotifyPayload,
    ) -> Attempt {
        match (name, sub) {
            ("ntfy", _) => match &self.ntfy {
                Some((ntfy, _)) => self.ntfy(ntfy, payload).await,
                None => Attempt::Fatal("ntfy is no longer configured".into()),
            },
            ("webhook", _) => match &self.webhook {
                Some((hook, _)) => self.webhook(hook, payload).await,
                None => Attempt::Fatal("the webhook is no longer configured".into()),
            },
            ("email", _) => match &self.email {
                Some((mailer, _)) => {
                    mailer
                        .send(payload, payload::text(payload), self.timeout)
                        .await
                }
                None => Attempt::Fatal("email is no longer configured".into()),
            },
            (_, Some(sub)) => {
                let pusher = Pusher {
                    vapid: &self.vapid,
                    subject: &self.subject,
                    allow: &self.allow,
                    resolver: &*self.resolver,
                    timeout: self.timeout,
                };
                pusher.send(sub, payload, &payload::json(payload)).await
            }
            (other, None) => Attempt::Fatal(format!("no channel {other}")),
        }
    }

    /// ntfy's publish: the text as body, what it is about in headers. Approve and deny
    /// open the task in the dashboard (`view`): an `http` action would have to carry the
    /// daemon's credential through the ntfy server, which must never hold it.
    async fn ntfy(&self, ntfy: &NtfySection, payload: &NotifyPayload) -> Attempt {
        let priority = if payload.kind.blocks() { "4" } else { "3" };
        let mut request = self
            .client
            .post(&ntfy.url)
            .header("Title", header_text(&payload.title))
            .header("Priority", priority)
            .header("Tags", format!("lazyboy,{}", payload.kind.as_str()))
            .header("Click", &payload.url)
            .header("X-LazyBoy-Delivery", &payload.id);
        if !payload.actions.is_empty() {
            let actions: Vec<String> = payload
                .actions
                .iter()
                .map(|a| {
                    format!(
                        "view, {}, {}",
                        header_text(&a.title).replace(',', " "),
                        payload.url
                    )
                })
                .collect();
            request = request.header("Actions", actions.join("; "));
        }
        if let Some(name) = &ntfy.token_env {
            match crate::secrets::var(name).filter(|t| !t.is_empty()) {
                Some(token) => request = request.bearer_auth(token),
                None => return Attempt::Fatal(format!("{name} (ntfy's token_env) is not set")),
            }
        }
        super::answer(request.body(payload::text(payload)).send().await).await
    }

    /// The payload as JSON, signed with the secret when there is one.
    async fn webhook(&self, hook: &WebhookSection, payload: &NotifyPayload) -> Attempt {
        let body = payload::json(payload);
        let mut request = self
            .client
            .post(&hook.url)
            .header("Content-Type", "application/json")
            .header("X-LazyBoy-Delivery", &payload.id)
            .header("X-LazyBoy-Event", payload.kind.as_str());
        if let Some(name) = &hook.secret_env {
            match crate::secrets::var(name).filter(|s| !s.is_empty()) {
                Some(secret) => {
                    request = request.header("X-LazyBoy-Signature", signature(&secret, &body));
                }
                None => {
                    return Attempt::Fatal(format!("{name} (the webhook's secret_env) is not set"));
                }
            }
        }
        super::answer(request.body(body).send().await).await
    }
}

/// `sha256=<hex HMAC-SHA-256 of the body>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// Header values are ASCII-safe here: other characters become `?` rather than fail the send
/// (ntfy also reads RFC 2047, which not every receiver does).
fn header_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_hex_hmac_of_the_body() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
