//! Which URLs the daemon will push to on a browser's say-so: a subscription's endpoint is an
//! outbound request anyone who can subscribe chooses, so it gets `web_fetch`'s address rules
//! (`web::policy`): `https` to a host whose every address is public unicast, after DNS; or a
//! host the person listed in `[notify] allow_hosts` (then `http` too). Never the daemon's own
//! listeners, whatever that list says. The check runs when a browser subscribes and again
//! before every push, and each push connects only to the addresses it checked (a name that
//! resolves differently the second time cannot slip past). Redirects are never followed.

use std::net::SocketAddr;
use std::time::Duration;

use url::{Host, Url};

use crate::web::Resolve;
use crate::web::policy::{AllowList, is_own_listener, non_public};

/// Why an endpoint is refused.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("the endpoint {0:?} is not a URL: {1}")]
    BadUrl(String, String),
    #[error(
        "the endpoint must be https:// (http:// only for a host in [notify] allow_hosts), not \
         {0}://"
    )]
    Scheme(String),
    #[error("the endpoint carries a user name or password; push endpoints never do")]
    Credentials,
    #[error("cannot resolve the endpoint's host {0}: {1}")]
    Dns(String, String),
    #[error(
        "the endpoint's host {host} is {ip}, a {kind} address; push endpoints must be public \
         (a self-hosted push service can be allowed with \"{host}:{port}\" in [notify] \
         allow_hosts)"
    )]
    NonPublic {
        host: String,
        port: u16,
        ip: std::net::IpAddr,
        kind: &'static str,
    },
    #[error("the endpoint {0} is this daemon's own listener")]
    OwnListener(SocketAddr),
}

/// Parses an endpoint and checks its form (scheme, credentials) without resolving it.
pub fn parse(text: &str, allow: &AllowList) -> Result<Url, EndpointError> {
    let url = Url::parse(text.trim())
        .map_err(|e| EndpointError::BadUrl(text.chars().take(200).collect(), e.to_string()))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EndpointError::Credentials);
    }
    let scheme = url.scheme().to_owned();
    if scheme != "https" && scheme != "http" {
        return Err(EndpointError::Scheme(scheme));
    }
    let host = host_of(&url)
        .ok_or_else(|| EndpointError::BadUrl(url.to_string(), "it has no host".to_owned()))?;
    let port = url.port_or_known_default().unwrap_or(0);
    if scheme == "http" && !allow.allows(&host, port) {
        return Err(EndpointError::Scheme(scheme));
    }
    Ok(url)
}

/// The host as the allow list names it (an IPv6 literal without brackets).
fn host_of(url: &Url) -> Option<String> {
    match url.host()? {
        Host::Domain(name) => Some(name.to_owned()),
        Host::Ipv4(ip) => Some(ip.to_string()),
        Host::Ipv6(ip) => Some(ip.to_string()),
    }
}

/// The addresses `url` may be reached at, if the rules let every one of them be.
pub async fn addresses(
    url: &Url,
    allow: &AllowList,
    resolver: &dyn Resolve,
) -> Result<Vec<SocketAddr>, EndpointError> {
    let host = host_of(url)
        .ok_or_else(|| EndpointError::BadUrl(url.to_string(), "it has no host".to_owned()))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| EndpointError::BadUrl(url.to_string(), "no port".to_owned()))?;
    let addrs = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(ip.into(), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(ip.into(), port)],
        _ => resolver
            .lookup(&host, port)
            .await
            .map_err(|e| EndpointError::Dns(host.clone(), e.to_string()))?,
    };
    if addrs.is_empty() {
        return Err(EndpointError::Dns(host, "no addresses".to_owned()));
    }
    if let Some(own) = addrs.iter().find(|a| is_own_listener(**a)) {
        return Err(EndpointError::OwnListener(*own));
    }
    if allow.allows(&host, port) {
        return Ok(addrs);
    }
    // One non-public address refuses the host: a connection may go to any of them.
    for addr in &addrs {
        if let Some(kind) = non_public(addr.ip()) {
            return Err(EndpointError::NonPublic {
                host,
                port,
                ip: addr.ip(),
                kind,
            });
        }
    }
    Ok(addrs)
}

/// A client that reaches `url`'s host only at `addrs`, follows no redirect and uses no
/// proxy.
pub fn pinned_client(
    url: &Url,
    addrs: &[SocketAddr],
    timeout: Duration,
) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(timeout)
        .timeout(timeout)
        .user_agent(super::USER_AGENT);
    if let Some(Host::Domain(domain)) = url.host() {
        builder = builder.resolve_to_addrs(domain, addrs);
    }
    builder.build().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;

    use super::*;

    struct Dns;

    impl Resolve for Dns {
        fn lookup<'a>(
            &'a self,
            host: &'a str,
            port: u16,
        ) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
            let ip = match host {
                "push.example" => "93.184.216.34",
                "sneaky.example" => "127.0.0.1",
                "lan.example" => "10.0.0.9",
                _ => return Box::pin(async { Err(std::io::Error::other("no such name")) }),
            };
            let addr = SocketAddr::new(ip.parse().unwrap(), port);
            Box::pin(async move { Ok(vec![addr]) })
        }
    }

    async fn check(text: &str, allow: &AllowList) -> Result<Vec<SocketAddr>, EndpointError> {
        let url = parse(text, allow)?;
        addresses(&url, allow, &Dns).await
    }

    #[tokio::test]
    async fn only_public_https_endpoints_or_allowed_hosts() {
        let none = AllowList::default();
        assert!(check("https://push.example/sub/1", &none).await.is_ok());
        for (bad, says) in [
            ("http://169.254.169.254/latest", "https"),
            ("https://169.254.169.254/latest", "link-local"),
            ("https://sneaky.example/x", "loopback"),
            ("https://lan.example/x", "private"),
            ("https://127.0.0.1:9/x", "loopback"),
            ("file:///etc/passwd", "https"),
            ("not a url", "not a URL"),
            ("https://user:pw@push.example/", "password"),
            ("https://nowhere.example/", "cannot resolve"),
        ] {
            let error = check(bad, &none).await.unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let allow = AllowList::parse(&["127.0.0.1:4000".into()]).unwrap();
        assert!(check("http://127.0.0.1:4000/push", &allow).await.is_ok());
        assert!(check("http://127.0.0.1:4001/push", &allow).await.is_err());
    }
}
