//! Where a TCP request may come from (the credential itself is [`super::auth`]'s).
//!
//! - DNS rebinding: a loopback-only listener serves only loopback `Host` names and addresses,
//!   so a web page on another name that resolves to 127.0.0.1 gets 421.
//! - CSRF: a state-changing request that names an `Origin` must name the daemon's own origin
//!   (the request's own `Host`), not merely a loopback one: a page served by another program
//!   on `127.0.0.1:9999` is same-site with the dashboard (cookies are not port-scoped) and gets
//!   403. A request that names no `Origin` is decided by [`super::auth`]: a browser always
//!   sends one with a state-changing request, so a cookie without it is refused there.
//! - Every response says it may not be framed by another site: `frame-ancestors 'none'` and
//!   `X-Frame-Options: DENY` for the dashboard and the API; `/novnc/` is framed by the
//!   dashboard itself (`'self'`, `SAMEORIGIN`). No referrer leaves the daemon, and nothing
//!   is sniffed into another type.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// What the TCP listener demands of where each request comes from.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// The listener is reachable beyond loopback (`--lan`): any `Host` is served (the
    /// credential decides), since a phone names the machine by its LAN address.
    pub beyond_loopback: bool,
}

/// The middleware: applies [`Guard`] to one request.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !guard.beyond_loopback && !host.is_some_and(host_is_loopback) {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "forbidden_host",
            "this daemon only answers requests addressed to localhost or a loopback address",
        )
        .into_response();
    }
    if !is_safe(request.method())
        && let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(origin, host)
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            "requests that change state are taken only from the dashboard's own origin",
        )
        .into_response();
    }
    let framed_by_dashboard = request.uri().path().starts_with("/novnc");
    let mut response = next.run(request).await;
    protect(response.headers_mut(), framed_by_dashboard);
    response
}

/// The headers every response carries (both listeners: the socket's answers are read by the
/// CLI, but one rule is simpler than two).
pub fn protect(headers: &mut HeaderMap, framed_by_dashboard: bool) {
    let (ancestors, frame) = if framed_by_dashboard {
        ("frame-ancestors 'self'", "SAMEORIGIN")
    } else {
        ("frame-ancestors 'none'", "DENY")
    };
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(ancestors),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static(frame));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

pub fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The host part of a `Host` header or an origin's authority, without port or brackets.
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((host, _)) if !host.contains(':') => host,
        _ => authority,
    }
}

fn host_is_loopback(authority: &str) -> bool {
    let host = host_part(authority).trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a request from `origin` may act on this daemon: only from its own origin, the
/// authority the request itself was addressed to (`host`).
pub fn origin_allowed(origin: &HeaderValue, host: Option<&str>) -> bool {
    let Some(authority) = origin
        .to_str()
        .ok()
        .and_then(|o| o.parse::<Uri>().ok())
        .and_then(|uri| uri.authority().map(|a| a.as_str().to_owned()))
    else {
        // "null" and other opaque origins.
        return false;
    };
    host.is_some_and(|h| h.eq_ignore_ascii_case(&authority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "LOCALHOST:8787",
            "127.0.0.1",
            "127.0.0.1:8787",
            "127.1.2.3:1",
            "[::1]:8787",
            "::1",
            "localhost.",
        ] {
            assert!(host_is_loopback(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8787",
            "192.168.1.5:8787",
            "localhost.evil.example",
            "[::2]:8787",
            "0.0.0.0",
            "",
        ] {
            assert!(!host_is_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn only_the_daemons_own_origin_may_change_state() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert!(origin_allowed(
            &v("http://127.0.0.1:8787"),
            Some("127.0.0.1:8787")
        ));
        assert!(origin_allowed(
            &v("http://192.168.1.5:8787"),
            Some("192.168.1.5:8787")
        ));
        // Another program's page on the same machine: same site, another origin.
        assert!(!origin_allowed(
            &v("http://127.0.0.1:9999"),
            Some("127.0.0.1:8787")
        ));
        assert!(!origin_allowed(
            &v("http://localhost:8787"),
            Some("127.0.0.1:8787")
        ));
        assert!(!origin_allowed(
            &v("http://evil.example"),
            Some("127.0.0.1:8787")
        ));
        assert!(!origin_allowed(&v("null"), Some("127.0.0.1:8787")));
        assert!(!origin_allowed(&v("http://127.0.0.1:8787"), None));
    }

    #[test]
    fn responses_refuse_framing_except_novnc_by_the_dashboard() {
        let mut headers = HeaderMap::new();
        protect(&mut headers, false);
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            "frame-ancestors 'none'"
        );
        let mut headers = HeaderMap::new();
        protect(&mut headers, true);
        assert_eq!(headers[header::X_FRAME_OPTIONS], "SAMEORIGIN");
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            "frame-ancestors 'self'"
        );
    }
}
