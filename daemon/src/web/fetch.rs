//! One fetch: redirects followed by hand, one hop at a time; each hop's host resolved here
//! ([`Resolve`]), every address checked against the policy, and the connection pinned to
//! exactly those addresses (`resolve_to_addrs` on a client built for the hop), so the
//! address connected to is the address checked. No proxy (it would pick the address
//! itself), no cookie store (reqwest is built without one), no credentials: a URL carrying a
//! user name or password is refused rather than sent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use url::Host;

use super::policy::non_public;
use super::{Web, text};

/// Sent as `User-Agent`: some sites refuse requests without one.
const USER_AGENT: &str = concat!("LazyBoy-web_fetch/", env!("CARGO_PKG_VERSION"));

/// Name resolution, behind a trait so tests can make a name resolve anywhere without DNS.
pub trait Resolve: Send + Sync {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
pub struct SystemDns;

impl Resolve for SystemDns {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// A fetched page, converted.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Where the content came from, after redirects.
    pub url: String,
    pub status: u16,
    /// The `Content-Type` header (`""` when there was none).
    pub content_type: String,
    /// Readable text (or a description of content that is not text).
    pub text: String,
    /// Body bytes read (after decompression).
    pub bytes: usize,
    /// The body was cut at the size cap.
    pub truncated: bool,
    /// The URLs redirected from, in order.
    pub redirects: Vec<String>,
}

/// A page and whether it came from the cache.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub page: Arc<Page>,
    /// `Some(age)` when served from the cache.
    pub cached: Option<std::time::Duration>,
}

/// Why a fetch failed (each says it for the model).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("invalid URL {0:?}: {1}")]
    BadUrl(String, String),
    #[error(
        "refused: {host} is {ip}, a {kind} address, and web_fetch reaches only public \
         addresses (the person can allow it with \"{host}:{port}\" in [web] allow_hosts of \
         config.toml)"
    )]
    Refused {
        host: String,
        port: u16,
        ip: std::net::IpAddr,
        kind: &'static str,
    },
    #[error(
        "refused: {0} is this daemon's own listener; web_fetch never reaches the daemon, \
         whatever [web] allow_hosts says"
    )]
    OwnListener(std::net::SocketAddr),
    #[error("cannot resolve {0}: {1}")]
    Dns(String, String),
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    #[error("timed out after {0} s")]
    Timeout(u64),
    #[error("{0}")]
    Http(String),
}

impl Web {
    /// `url`, from the cache if fetched in the last 10 minutes, else from the network.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        let parsed = parse(url)?;
        let key = parsed.as_str().to_owned();
        if let Some((page, age)) = self.cache.get(&key) {
            return Ok(Fetched {
                page,
                cached: Some(age),
            });
        }
        let timeout = self.settings.timeout;
        let page = tokio::time::timeout(timeout, self.fetch_uncached(parsed))
            .await
            .map_err(|_| FetchError::Timeout(timeout.as_secs()))??;
        let page = Arc::new(page);
        if (200..300).contains(&page.status) {
            self.cache.put(key, page.clone());
        }
        Ok(Fetched { page, cached: None })
    }

    async fn fetch_uncached(&self, mut url: Url) -> Result<Page, FetchError> {
        let mut redirects = Vec::new();
        loop {
            let response = self.hop(&url).await?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                if redirects.len() >= self.settings.max_redirects {
                    return Err(FetchError::TooManyRedirects(self.settings.max_redirects));
                }
                let location = location.to_str().unwrap_or_default();
                let next = url
                    .join(location)
                    .map_err(|e| FetchError::BadUrl(location.to_owned(), e.to_string()))?;
                check_url(&next)?;
                redirects.push(std::mem::replace(&mut url, next).to_string());
                continue;
            }
            return self.read(url, response, redirects).await;
        }
    }

    /// One request to `url`, connected only to addresses that passed the policy.
    async fn hop(&self, url: &Url) -> Result<reqwest::Response, FetchError> {
        let addrs = self.checked_addresses(url).await?;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(self.settings.connect_timeout)
            .user_agent(USER_AGENT);
        if let Some(Host::Domain(domain)) = url.host() {
            builder = builder.resolve_to_addrs(domain, &addrs);
        }
        let client = builder
            .build()
            .map_err(|e| FetchError::Http(e.to_string()))?;
        client
            .get(url.clone())
            .header(
                ACCEPT,
                "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| FetchError::Http(describe(&e)))
    }

    /// The addresses `url`'s host stands for, if the policy lets every one be reached.
    pub async fn checked_addresses(&self, url: &Url) -> Result<Vec<SocketAddr>, FetchError> {
        let port = url
            .port_or_known_default()
            .ok_or_else(|| FetchError::BadUrl(url.to_string(), "no port".into()))?;
        let (host, addrs) = match url.host() {
            Some(Host::Ipv4(ip)) => (ip.to_string(), vec![SocketAddr::new(ip.into(), port)]),
            Some(Host::Ipv6(ip)) => (ip.to_string(), vec![SocketAddr::new(ip.into(), port)]),
            Some(Host::Domain(name)) => {
                let addrs = self
                    .resolver
                    .lookup(name, port)
                    .await
                    .map_err(|e| FetchError::Dns(name.to_owned(), e.to_string()))?;
                (name.to_owned(), addrs)
            }
            None => return Err(FetchError::BadUrl(url.to_string(), "no host".into())),
        };
        if addrs.is_empty() {
            return Err(FetchError::Dns(host, "no addresses".into()));
        }
        if let Some(own) = addrs
            .iter()
            .find(|addr| super::policy::is_own_listener(**addr))
        {
            return Err(FetchError::OwnListener(*own));
        }
        if self.settings.allow.allows(&host, port) {
            return Ok(addrs);
        }
        // One non-public address refuses the host: a connection may go to any of them.
        for addr in &addrs {
            if let Some(kind) = non_public(addr.ip()) {
                return Err(FetchError::Refused {
                    host,
                    port,
                    ip: addr.ip(),
                    kind,
                });
            }
        }
        Ok(addrs)
    }

    /// Reads the body up to the cap and converts it.
    async fn read(
        &self,
        url: Url,
        response: reqwest::Response,
        redirects: Vec<String>,
    ) -> Result<Page, FetchError> {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let cap = self.settings.max_bytes;
        let mut body = Vec::new();
        let mut truncated = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| FetchError::Http(describe(&e)))?;
            let room = cap - body.len();
            if chunk.len() >= room {
                body.extend_from_slice(&chunk[..room]);
                // Dropping the stream closes the connection: the rest is never read.
                truncated = chunk.len() > room || stream.next().await.is_some();
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let bytes = body.len();
        let kind = content_type.clone();
        let base = url.to_string();
        let started = Instant::now();
        // Parsing a large page takes a while: off the async workers.
        let text = tokio::task::spawn_blocking(move || text::convert(&kind, &body, &base))
            .await
            .map_err(|e| FetchError::Http(format!("converting the page failed: {e}")))?;
        tracing::debug!(url = %url, bytes, took_ms = started.elapsed().as_millis() as u64, "page converted");
        Ok(Page {
            url: url.to_string(),
            status,
            content_type,
            text,
            bytes,
            truncated,
            redirects,
        })
    }
}

/// Parses and checks a URL the model gave.
fn parse(url: &str) -> Result<Url, FetchError> {
    let mut parsed =
        Url::parse(url.trim()).map_err(|e| FetchError::BadUrl(url.to_owned(), e.to_string()))?;
    check_url(&parsed)?;
    parsed.set_fragment(None);
    Ok(parsed)
}

/// http(s) only, and no credentials in the URL (web_fetch never sends any).
fn check_url(url: &Url) -> Result<(), FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::BadUrl(
            url.to_string(),
            "only http and https URLs can be fetched".into(),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::BadUrl(
            url.to_string(),
            "URLs with credentials are refused: web_fetch never sends credentials".into(),
        ));
    }
    Ok(())
}

/// reqwest's error with its causes (its own message is often just "error sending request").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;
    use crate::web::{FetchSettings, WebSection};

    /// Names resolve to whatever the test says; every lookup is recorded. Nothing connects:
    /// the addresses below are refused before any request is built.
    struct FakeDns {
        names: HashMap<&'static str, Vec<&'static str>>,
        asked: Mutex<Vec<String>>,
    }

    impl Resolve for FakeDns {
        fn lookup<'a>(
            &'a self,
            host: &'a str,
            port: u16,
        ) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
            self.asked.lock().unwrap().push(host.to_owned());
            let found = self.names.get(host).map(|ips| {
                ips.iter()
                    .map(|ip| SocketAddr::new(ip.parse().unwrap(), port))
                    .collect()
            });
            Box::pin(async move { found.ok_or_else(|| std::io::Error::other("no such name")) })
        }
    }

    fn web(allow: &[&str]) -> (Web, Arc<FakeDns>) {
        let dns = Arc::new(FakeDns {
            names: HashMap::from([
                ("metadata.test", vec!["169.254.169.254"]),
                ("lan.test", vec!["10.0.0.7"]),
                ("mixed.test", vec!["93.184.216.34", "192.168.0.1"]),
                ("v6.test", vec!["fd12::1"]),
                ("public.test", vec!["93.184.216.34"]),
            ]),
            asked: Mutex::new(Vec::new()),
        });
        let section = WebSection {
            allow_hosts: allow.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        // The defaults (an empty cache, no search) with these settings and names.
        let web = Web {
            settings: FetchSettings::from_section(&section).unwrap(),
            resolver: dns.clone(),
            ..Web::fallback()
        };
        (web, dns)
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[tokio::test]
    async fn names_resolving_to_non_public_addresses_are_refused_before_any_request() {
        let (web, dns) = web(&[]);
        for (target, kind) in [
            ("http://metadata.test/latest/meta-data/", "link-local"),
            ("http://lan.test:8080/", "private"),
            ("https://mixed.test/", "private"),
            ("http://v6.test/", "unique local"),
            ("http://10.1.2.3/", "private"),
            ("http://[fe80::1]/", "link-local"),
            ("http://0.0.0.0:9/", "unspecified"),
        ] {
            let error = web.fetch(target).await.unwrap_err();
            let text = error.to_string();
            assert!(
                matches!(error, FetchError::Refused { .. }),
                "{target}: {text}"
            );
            assert!(text.contains(kind), "{target}: {text}");
            assert!(text.contains("allow_hosts"), "{text}");
        }
        // Literals were never looked up; names were, once each.
        assert_eq!(
            *dns.asked.lock().unwrap(),
            ["metadata.test", "lan.test", "mixed.test", "v6.test"]
        );
    }

    #[tokio::test]
    async fn allow_hosts_lets_a_named_host_through_on_its_port_only() {
        let (web, _) = web(&["lan.test:8080", "metadata.test"]);
        let addrs = web
            .checked_addresses(&url("http://lan.test:8080/x"))
            .await
            .unwrap();
        assert_eq!(addrs, ["10.0.0.7:8080".parse().unwrap()]);
        assert!(
            web.checked_addresses(&url("http://lan.test:8081/"))
                .await
                .is_err()
        );
        assert!(
            web.checked_addresses(&url("http://metadata.test:1234/"))
                .await
                .is_ok()
        );
        let public = web
            .checked_addresses(&url("https://public.test/"))
            .await
            .unwrap();
        assert_eq!(public, ["93.184.216.34:443".parse().unwrap()]);
    }

    #[tokio::test]
    async fn only_plain_http_urls_without_credentials_are_fetched() {
        let (web, dns) = web(&[]);
        for bad in [
            "ftp://public.test/",
            "file:///etc/passwd",
            "http://user:secret@public.test/",
            "not a url",
        ] {
            let error = web.fetch(bad).await.unwrap_err();
            assert!(matches!(error, FetchError::BadUrl(..)), "{bad}: {error}");
        }
        assert!(dns.asked.lock().unwrap().is_empty());
        let unknown = web.fetch("http://nowhere.test/").await.unwrap_err();
        assert!(unknown.to_string().contains("cannot resolve nowhere.test"));
    }
}
