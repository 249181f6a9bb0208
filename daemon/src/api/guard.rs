//! Guards on the TCP listener (the local socket is protected by its file mode instead).
//!
//! - DNS rebinding: without a token, only loopback `Host` names and addresses are served, so a
//!   web page on another name that resolves to 127.0.0.1 gets 421.
//! - CSRF: a state-changing request whose `Origin` is neither loopback nor the page's own
//!   origin gets 403.
//! - Tokens: when the listener is reachable beyond loopback, every request must carry the
//!   token (`Authorization: Bearer`, or the cookie set by visiting `/?token=...`). The token
//!   is read on every request, so a rotation (`super::token`) takes effect at once.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::token::Token;

/// The cookie that carries the token for browsers.
pub const TOKEN_COOKIE: &str = "lazyboy_token";

/// What the TCP listener demands of each request.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Required when set: the listener is reachable beyond loopback.
    pub token: Option<Token>,
}

/// The middleware: applies [`Guard`] to one request.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if guard.token.is_none() && !host.is_some_and(host_is_loopback) {
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
            "cross-origin requests that change state are refused",
        )
        .into_response();
    }
    if let Some(token) = &guard.token {
        let token = token.current();
        let token = token.as_ref();
        if let Some(offered) = query_token(request.uri()) {
            return if token_eq(offered, token) {
                login_redirect(token)
            } else {
                unauthorized()
            };
        }
        if !offered_tokens(headers).any(|offered| token_eq(offered, token)) {
            return unauthorized();
        }
    }
    next.run(request).await
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn unauthorized() -> Response {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a token is required: open the dashboard URL printed by `lazyboy daemon status`, or send \
         Authorization: Bearer <token>",
    )
    .into_response()
}

/// Sets the cookie and sends the browser to the same path without the token in its URL.
fn login_redirect(token: &str) -> Response {
    let cookie = format!("{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
        .headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/"));
    response
}

fn query_token(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// Tokens offered by the bearer header and by the cookie.
fn offered_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok()?.strip_prefix("Bearer "));
    let cookies = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(TOKEN_COOKIE)?.strip_prefix('='));
    bearer.chain(cookies)
}

/// Compares without leaking, through timing, how much of the token matched.
fn token_eq(offered: &str, token: &str) -> bool {
    let (a, b) = (offered.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

/// Whether a request from `origin` may act on this daemon (loopback, or its own origin).
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
    host_is_loopback(&authority) || host.is_some_and(|h| h.eq_ignore_ascii_case(&authority))
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
    fn origins() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert!(origin_allowed(
            &v("http://localhost:8787"),
            Some("127.0.0.1:8787")
        ));
        assert!(origin_allowed(
            &v("http://192.168.1.5:8787"),
            Some("192.168.1.5:8787")
        ));
        assert!(!origin_allowed(
            &v("http://evil.example"),
            Some("127.0.0.1:8787")
        ));
        assert!(!origin_allowed(&v("null"), Some("127.0.0.1:8787")));
    }

    #[test]
    fn tokens() {
        assert!(token_eq("abc", "abc"));
        assert!(!token_eq("abd", "abc"));
        assert!(!token_eq("ab", "abc"));
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, v("a=1; lazyboy_token=sekrit; b=2"));
        headers.insert(header::AUTHORIZATION, v("Bearer other"));
        let offered: Vec<_> = offered_tokens(&headers).collect();
        assert_eq!(offered, ["other", "sekrit"]);
    }

    fn v(s: &'static str) -> HeaderValue {
        HeaderValue::from_static(s)
    }
}
