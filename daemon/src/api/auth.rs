//! Who may use the API: whoever holds the home's secret (`<home>/token`, mode 0600, or
//! `LAZYBOY_TOKEN`), proven on every request of every listener. Never where a connection seems
//! to come from: a confined agent's command can reach the socket and the ports, but it cannot
//! read the home, so it holds no credential.
//!
//! - The local socket: `Authorization: Bearer <token>` (the CLI reads the file), and the
//!   peer's user id (`SO_PEERCRED`) must be the daemon's (or root's, who can read the token
//!   and act as any user anyway).
//! - TCP (loopback or `--lan`): the bearer header, or the session cookie a browser got from a
//!   one-time login link. The cookie is not the token but an HMAC of it (so it names no
//!   secret usable on the socket, and a rotation ends every session); `HttpOnly`,
//!   `SameSite=Strict`, and under TLS `Secure` with the `__Host-` prefix. A state-changing
//!   request carried by the cookie alone must name the daemon's own origin (`Origin`,
//!   checked by [`super::guard`]); one that names none is refused, since browsers always send
//!   it there.
//! - Login links: `POST /api/auth/login` (authenticated: the CLI) mints a one-time code;
//!   `GET /login?code=…` redeems it for the cookie and redirects to `/`, so the code leaves the
//!   address bar and the token is never in a URL. Codes expire after [`LOGIN_TTL`] and are
//!   kept in memory only (a restart voids them).
//! - Public: only the login route, the web app manifest and its icons (browsers may fetch
//!   those without cookies to install the app; they hold no data). Everything else, the
//!   page and its scripts included, needs the credential; `GET /` without one gets a page
//!   that says how to sign in.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use super::error::ApiError;
use super::peers::Peer;
use super::token::Token;

/// How long a login link works.
pub const LOGIN_TTL: Duration = Duration::from_secs(15 * 60);
/// Unredeemed login codes kept at most (the oldest go first).
const MAX_PENDING: usize = 64;
/// The session cookie lasts as long as browsers allow (400 days), so an installed dashboard
/// stays signed in; rotating the token ends it.
const COOKIE_MAX_AGE: u64 = 400 * 86_400;

/// The credentials in force, shared by both listeners' middleware and the login routes.
#[derive(Debug)]
pub struct Auth {
    token: Token,
    tls: bool,
    /// The daemon's effective user id: the only one the socket serves.
    uid: u32,
    /// One-time login codes: when each expires (ms since the epoch) and its serial number
    /// (the order they were minted in, so the oldest goes first when there are too many).
    logins: Mutex<Logins>,
}

impl Auth {
    pub fn new(token: Token, tls: bool) -> Auth {
        Auth {
            token,
            tls,
            uid: nix::unistd::geteuid().as_raw(),
            logins: Mutex::new(Logins::default()),
        }
    }

    /// `__Host-lazyboy_session` under TLS (only ever sent over HTTPS, to this host and any
    /// path), else `lazyboy_session`.
    pub fn cookie_name(&self) -> &'static str {
        if self.tls {
            "__Host-lazyboy_session"
        } else {
            "lazyboy_session"
        }
    }

    /// The session cookie's value for the token in force.
    fn session(&self) -> String {
        let token = self.token.current();
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token.as_bytes());
        let tag = ring::hmac::sign(&key, b"lazyboy dashboard session v1");
        hex(tag.as_ref())
    }

    fn bearer(&self, headers: &HeaderMap) -> bool {
        let token = self.token.current();
        headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok()?.strip_prefix("Bearer "))
            .any(|offered| same(offered.trim(), &token))
    }

    fn cookie(&self, headers: &HeaderMap) -> bool {
        let name = self.cookie_name();
        let session = self.session();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
            .any(|offered| same(offered, &session))
    }

    /// A new one-time login code and when it expires (ms since the epoch).
    pub fn mint(&self) -> std::io::Result<(String, u64)> {
        let code = random_hex(24)?;
        let expires = now_ms() + LOGIN_TTL.as_millis() as u64;
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        let now = now_ms();
        logins.pending.retain(|_, (expires, _)| *expires > now);
        while logins.pending.len() >= MAX_PENDING {
            let oldest = logins
                .pending
                .iter()
                .min_by_key(|(_, (_, serial))| *serial)
                .map(|(code, _)| code.clone());
            let Some(oldest) = oldest else { break };
            logins.pending.remove(&oldest);
        }
        logins.serial += 1;
        let serial = logins.serial;
        logins.pending.insert(code.clone(), (expires, serial));
        Ok((code, expires))
    }

    /// Spends `code`: true once, while it has not expired.
    fn redeem(&self, code: &str) -> bool {
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        // Compared in constant time against each pending code, so timing says nothing.
        let found = logins
            .pending
            .keys()
            .find(|known| same(code, known))
            .cloned();
        match found.and_then(|code| logins.pending.remove(&code)) {
            Some((expires, _)) => expires > now_ms(),
            None => false,
        }
    }

    /// The `Set-Cookie` value that signs a browser in.
    fn set_cookie(&self) -> String {
        let secure = if self.tls { "; Secure" } else { "" };
        let session = self.session();
        // The cookie is as good as the token: redacted wherever it might be stored or sent.
        crate::redact::register("session cookie", &session);
        format!(
            "{}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_MAX_AGE}{secure}",
            self.cookie_name(),
        )
    }
}

/// The login codes not redeemed yet.
#[derive(Debug, Default)]
struct Logins {
    pending: HashMap<String, (u64, u64)>,
    serial: u64,
}

/// The socket's middleware: the daemon's own user, with the token.
pub async fn socket(
    State(auth): State<Arc<Auth>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    if !peer.uid.is_some_and(|uid| uid == auth.uid || uid == 0) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_user",
            "this daemon serves only the user it runs as",
        )
        .into_response();
    }
    if !auth.bearer(request.headers()) {
        return unauthorized();
    }
    next.run(request).await
}

/// The TCP listener's middleware: the token, or the session cookie (with the origin rule).
pub async fn tcp(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if is_public(path) || auth.bearer(request.headers()) {
        return next.run(request).await;
    }
    if auth.cookie(request.headers()) {
        if !super::guard::is_safe(request.method())
            && !request.headers().contains_key(header::ORIGIN)
        {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_required",
                "a browser's request that changes state must say its origin",
            )
            .into_response();
        }
        return next.run(request).await;
    }
    if request.method() == Method::GET && path == "/" {
        return login_help(StatusCode::UNAUTHORIZED);
    }
    unauthorized()
}

/// Routes anyone may fetch: the login exchange, and what installing the app fetches.
fn is_public(path: &str) -> bool {
    path == "/login" || path == "/manifest.webmanifest" || path.starts_with("/assets/icons/")
}

/// `GET /login?code=…`: a valid code becomes the session cookie and a redirect to `/`.
pub async fn login(State(auth): State<Arc<Auth>>, request: Request) -> Response {
    let code = request
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("code=")))
        .unwrap_or("");
    if code.is_empty() || !auth.redeem(code) {
        return login_help(StatusCode::UNAUTHORIZED);
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&auth.set_cookie()) {
        headers.insert(header::SET_COOKIE, value);
    }
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn unauthorized() -> Response {
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "this needs the daemon's credential: the lazyboy CLI sends it (a CLI older than the \
         daemon does not: upgrade it); a browser signs in through the link `lazyboy web` prints; \
         other clients send Authorization: Bearer <the token in the home, `lazyboy daemon token`>",
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"lazyboy\""),
    );
    response
}

/// The page a browser without a session sees instead of the dashboard.
fn login_help(status: StatusCode) -> Response {
    let page = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
        <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
        <title>LazyBoy: sign in</title></head><body style=\"font-family:system-ui;\
        max-width:34em;margin:3em auto;padding:0 1em;line-height:1.5\">\
        <h1>Sign in to LazyBoy</h1><p>This browser is not signed in to this daemon, or its \
        login link was already used or has expired.</p><p>On the computer the daemon runs on, \
        run <code>lazyboy web</code>: it prints (and opens) a one-time login link. For a phone \
        on the same network, <code>lazyboy daemon start --lan</code> prints one with a QR code.\
        </p></body></html>";
    let mut response = (status, Html(page)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Compares without leaking, through timing, how much matched.
fn same(offered: &str, expected: &str) -> bool {
    let (a, b) = (offered.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(len: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; len];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(hex(&bytes))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(tls: bool) -> Auth {
        Auth::new(Token::new("sekrit"), tls)
    }

    #[test]
    fn a_login_code_works_once() {
        let auth = auth(false);
        let (code, expires) = auth.mint().unwrap();
        assert!(expires > now_ms());
        assert_eq!(code.len(), 48);
        assert!(!auth.redeem("wrong"));
        assert!(auth.redeem(&code));
        assert!(!auth.redeem(&code), "spent");
    }

    #[test]
    fn pending_codes_are_bounded() {
        let auth = auth(false);
        let first = auth.mint().unwrap().0;
        for _ in 0..MAX_PENDING {
            auth.mint().unwrap();
        }
        assert!(auth.logins.lock().unwrap().pending.len() <= MAX_PENDING);
        assert!(!auth.redeem(&first), "the oldest went first");
    }

    #[test]
    fn the_cookie_is_not_the_token_and_changes_with_it() {
        let token = Token::new("sekrit");
        let auth = Auth::new(token.clone(), false);
        let before = auth.session();
        assert_ne!(before, "sekrit");
        let mut headers = HeaderMap::new();
        let cookie = format!("a=1; lazyboy_session={before}");
        headers.insert(header::COOKIE, HeaderValue::from_str(&cookie).unwrap());
        assert!(auth.cookie(&headers));
        token.replace("other");
        assert!(!auth.cookie(&headers), "a rotation ends the session");
    }

    #[test]
    fn the_cookie_is_host_prefixed_and_secure_under_tls() {
        let plain = auth(false).set_cookie();
        assert!(plain.starts_with("lazyboy_session="), "{plain}");
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        let tls = auth(true).set_cookie();
        assert!(tls.starts_with("__Host-lazyboy_session="), "{tls}");
        assert!(tls.contains("; Secure") && tls.contains("Path=/"));
        assert!(!tls.contains("Domain"));
    }

    #[test]
    fn bearer_tokens_are_compared_whole() {
        let auth = auth(false);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer sekri"),
        );
        assert!(!auth.bearer(&headers));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer sekrit"),
        );
        assert!(auth.bearer(&headers));
        assert!(same("abc", "abc") && !same("abd", "abc") && !same("ab", "abc"));
    }
}
