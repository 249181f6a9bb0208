//! What the notifier tells the person about itself: `GET /api/notify` (each channel, its
//! last delivery and failures, the devices), `POST /api/notify/test` (a test notification
//! through each channel, sent at once, outside the outbox) and doctor's channel checks
//! (reachable, secrets set; nothing sent).

use lazyboy_protocol::{
    ChannelResult, ChannelStatus, CheckStatus, DoctorCheck, NotifyKind, NotifyStatus,
    NotifyTestResult,
};
use std::sync::PoisonError;

use super::{Notifier, NotifyError, WEB_PUSH, outbox, payload};

impl Notifier {
    /// `GET /api/notify`: every channel with its last delivery.
    pub async fn status(&self) -> Result<NotifyStatus, NotifyError> {
        let subs = self.store.subscriptions().await?;
        let stats = self
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let pending = self.pending_by_channel();
        let mut channels = Vec::new();
        let mut add = |channel: String, target: String, kinds: &[NotifyKind]| {
            let s = stats.get(&channel).cloned().unwrap_or_default();
            channels.push(ChannelStatus {
                pending: pending.get(&channel).copied().unwrap_or(0),
                channel,
                target,
                kinds: kinds.to_vec(),
                last_at_ms: s.last_at_ms,
                last_ok: s.last_ok,
                last_error: s.last_error,
                failures: s.failures,
            });
        };
        if let Some((ntfy, kinds)) = &self.channels.ntfy {
            add("ntfy".into(), without_secrets(&ntfy.url), kinds);
        }
        if let Some((hook, kinds)) = &self.channels.webhook {
            add("webhook".into(), without_secrets(&hook.url), kinds);
        }
        if let Some((mailer, kinds)) = &self.channels.email {
            add("email".into(), mailer.target(), kinds);
        }
        for sub in &subs {
            let host = url::Url::parse(&sub.endpoint)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default();
            let name = sub.name.clone().unwrap_or_else(|| "a browser".to_owned());
            add(
                format!("{WEB_PUSH}:{}", sub.id),
                format!("{name} via {host}"),
                &self.channels.web_push_kinds,
            );
        }
        Ok(NotifyStatus {
            channels,
            subscriptions: subs.iter().map(|s| s.to_api()).collect(),
            public_url: self.base_url.clone(),
            scanned_seq: self.saved_scan.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// `POST /api/notify/test`: one test notification per channel (`web_push` means every
    /// subscription), sent now, outside the outbox; each channel's outcome.
    pub async fn test(&self, only: Option<&str>) -> Result<NotifyTestResult, NotifyError> {
        let subs = self.store.subscriptions().await?;
        let mut names = self.channels.for_kind(NotifyKind::Test, &subs);
        if let Some(only) = only {
            names.retain(|n| n == only || (only == WEB_PUSH && n.starts_with("web_push:")));
            if names.is_empty() {
                return Err(NotifyError::NoChannel(only.to_owned()));
            }
        }
        let id = format!("test-{}", uuid::Uuid::now_v7().simple());
        let payload = payload::test(&self.base_url, id, crate::store::now_ms());
        let sends = names.iter().map(|name| {
            let sub = subs
                .iter()
                .find(|s| Some(s.id.as_str()) == name.strip_prefix("web_push:"));
            let payload = &payload;
            async move {
                let attempt = self.channels.send(name, sub, payload).await;
                self.count(name, &attempt);
                let (ok, detail) = match attempt {
                    outbox::Attempt::Sent => (true, "sent".to_owned()),
                    outbox::Attempt::Retry { error, .. }
                    | outbox::Attempt::Fatal(error)
                    | outbox::Attempt::Gone(error) => (false, error),
                };
                ChannelResult {
                    channel: name.clone(),
                    ok,
                    detail,
                }
            }
        });
        let results = futures_util::future::join_all(sends).await;
        Ok(NotifyTestResult { results })
    }

    /// Doctor: each configured channel reachable and its credentials present, nothing sent.
    pub async fn doctor(&self) -> Vec<DoctorCheck> {
        let mut out = Vec::new();
        let secret = |name: &Option<String>, what: &str| match name {
            Some(name) if crate::secrets::var(name).is_none_or(|v| v.is_empty()) => Err(format!(
                "{name} ({what}) is not set in the daemon's environment"
            )),
            _ => Ok(()),
        };
        if let Some((ntfy, _)) = &self.channels.ntfy {
            let result = match secret(&ntfy.token_env, "ntfy's token_env") {
                Err(e) => Err(e),
                Ok(()) => self.reachable(&ntfy.url).await,
            };
            out.push(doctor_line(
                "notify ntfy",
                result,
                "[notify.ntfy] in config.toml",
            ));
        }
        if let Some((hook, _)) = &self.channels.webhook {
            let result = match secret(&hook.secret_env, "the webhook's secret_env") {
                Err(e) => Err(e),
                Ok(()) => self.reachable(&hook.url).await,
            };
            out.push(doctor_line(
                "notify webhook",
                result,
                "[notify.webhook] in config.toml",
            ));
        }
        if let Some((mailer, _)) = &self.channels.email {
            let result = mailer
                .check(self.channels.timeout)
                .await
                .map(|()| format!("{} answers", mailer.target()));
            out.push(doctor_line(
                "notify email",
                result,
                "[notify.email] in config.toml",
            ));
        }
        let devices = self
            .store
            .subscriptions()
            .await
            .map(|s| s.len())
            .unwrap_or(0);
        if out.is_empty() && devices == 0 {
            out.push(DoctorCheck {
                name: "notify".into(),
                status: CheckStatus::Warn,
                detail: "nothing reaches you when no dashboard is open".into(),
                fix: Some(
                    "press Notify me in the installed dashboard, or add [notify.ntfy], \
                     [notify.webhook] or [notify.email] to config.toml (see the README)"
                        .into(),
                ),
            });
        } else if devices > 0 {
            out.push(DoctorCheck {
                name: "notify web push".into(),
                status: CheckStatus::Ok,
                detail: format!(
                    "{devices} device(s) subscribed; links open {}",
                    self.base_url
                ),
                fix: None,
            });
        }
        out
    }

    /// Whether `url`'s server accepts a connection (a HEAD; any answer counts).
    async fn reachable(&self, url: &str) -> Result<String, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.channels.timeout)
            .build()
            .map_err(|e| e.to_string())?;
        match client.head(url).send().await {
            Ok(response) => Ok(format!(
                "{} answers (HTTP {})",
                without_secrets(url),
                response.status().as_u16()
            )),
            Err(e) => Err(format!("{}: {}", without_secrets(url), e.without_url())),
        }
    }
}

fn doctor_line(name: &str, result: Result<String, String>, section: &str) -> DoctorCheck {
    match result {
        Ok(detail) => DoctorCheck {
            name: name.to_owned(),
            status: CheckStatus::Ok,
            detail,
            fix: None,
        },
        Err(detail) => DoctorCheck {
            name: name.to_owned(),
            status: CheckStatus::Fail,
            detail,
            fix: Some(format!(
                "check {section} and the daemon's environment; then `lazyboy notify test`"
            )),
        },
    }
}

/// A URL as status shows it: no user, password or query (a token may hide there).
fn without_secrets(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.to_string()
        }
        Err(_) => "(not a URL)".to_owned(),
    }
}
