//! The TCP listener's guards: DNS rebinding (Host), CSRF (Origin: the daemon's own only), and
//! the token on every listener, loopback or not (the attacks on it are in `auth.rs`).

use std::os::unix::fs::PermissionsExt;

use lazyboy_protocol::{ErrorBody, Health, paths};
use lazyboy_tests::{KillOnDrop, TestDaemon, add_agent, all_events, cli, temp_home};
use serde_json::json;

async fn code(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: ErrorBody = response.json().await.unwrap();
    (status, body.error.code)
}

#[tokio::test]
async fn foreign_host_and_origin_are_refused_on_loopback() {
    let daemon = TestDaemon::start().await;
    add_agent(&daemon, "ops").await;
    let before = all_events(&daemon, 0).await;
    let http = &daemon.http;
    let port = daemon.url("").rsplit(':').next().unwrap().to_owned();

    // DNS rebinding: evil.example resolved to 127.0.0.1, the browser sends its own Host.
    for path in ["/api/health", "/", "/api/events?after=0"] {
        let response = http
            .get(daemon.url(path))
            .header("Host", format!("evil.example:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            code(response).await,
            (421, "forbidden_host".into()),
            "{path}"
        );
    }
    let response = http
        .post(daemon.url("/api/agents/ops/messages"))
        .header("Host", "evil.example")
        .json(&json!({"text": "rebound"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(response).await.0, 421);
    // Loopback names and addresses pass.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let response = http
            .get(daemon.url("/api/health"))
            .header("Host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }

    // CSRF: a page elsewhere posts to us, also one served by another program on this
    // machine (same site as the dashboard: cookies are not port-scoped).
    let other_port = format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() ^ 1);
    for origin in [
        "http://evil.example",
        "null",
        "http://192.168.1.20:8787",
        other_port.as_str(),
        &format!("http://localhost:{port}"),
    ] {
        let response = http
            .post(daemon.url("/api/agents/ops/messages"))
            .header("Origin", origin)
            .json(&json!({"text": "forged"}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            code(response).await,
            (403, "forbidden_origin".into()),
            "{origin}"
        );
        let response = http
            .delete(daemon.url("/api/agents/ops"))
            .header("Origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(code(response).await.0, 403);
    }
    assert_eq!(
        all_events(&daemon, 0).await,
        before,
        "refused requests wrote nothing"
    );
    // The dashboard's own origin may post.
    let response = http
        .post(daemon.url("/api/agents/ops/messages"))
        .header("Origin", format!("http://127.0.0.1:{port}"))
        .json(&json!({"text": "from the dashboard"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    daemon.stop();
}

#[tokio::test]
async fn a_non_loopback_listener_needs_the_token() {
    let home = temp_home();
    // `lazyboy daemon token` with no daemon writes one, private, and prints the same one
    // each time; the daemon then uses it.
    let token = cli(home.path()).args(["daemon", "token"]).output().unwrap();
    assert!(token.status.success());
    let token = String::from_utf8(token.stdout).unwrap().trim().to_owned();
    assert_eq!(token.len(), 48);
    let file = home.path().join(paths::TOKEN);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let again = cli(home.path()).args(["daemon", "token"]).output().unwrap();
    assert_eq!(String::from_utf8(again.stdout).unwrap().trim(), token);
    check_token_mode(home.path(), &token, &[]).await;
}

#[tokio::test]
async fn lazyboy_token_env_guards_a_non_loopback_listener() {
    let home = temp_home();
    check_token_mode(
        home.path(),
        "env-token-123",
        &[("LAZYBOY_TOKEN", "env-token-123")],
    )
    .await;
}

/// Starts a daemon on 0.0.0.0 (reached here through 127.0.0.1) and checks that every request
/// needs `token`.
async fn check_token_mode(home: &std::path::Path, token: &str, env: &[(&str, &str)]) {
    let (mut child, port) = on_all_interfaces(home, env).await;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    for path in [
        "/api/health",
        "/api/agents",
        "/api/events?after=0",
        "/novnc/",
    ] {
        let response = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(code(response).await, (401, "unauthorized".into()), "{path}");
    }
    // The page itself says how to sign in.
    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 401);
    assert!(page.text().await.unwrap().contains("lazyboy web"));
    let wrong = http
        .get(format!("{base}/api/health"))
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let posted = http
        .post(format!("{base}/api/agents"))
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 401);

    let ok = http
        .get(format!("{base}/api/health"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // A phone on the LAN has no loopback Host; the token is what lets it in.
    let lan = http
        .post(format!("{base}/api/agents"))
        .header("Host", format!("192.168.1.5:{port}"))
        .bearer_auth(token)
        .json(&json!({"name": "phone"}))
        .send()
        .await
        .unwrap();
    assert_eq!(lan.status(), 201);

    // The token never goes into a URL: `?token=` signs nobody in.
    let by_url = http
        .get(format!("{base}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(by_url.status(), 401);
    assert!(by_url.headers().get("set-cookie").is_none());
    // A one-time login link sets the session cookie and drops the code from the URL.
    let bad_login = http
        .get(format!("{base}/login?code=wrong"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_login.status(), 401);
    let client = lazyboy::connection::Client::with_token(home.to_owned(), token);
    let code: lazyboy_protocol::LoginCode = client
        .call(
            lazyboy::connection::Method::POST,
            "/api/auth/login",
            None::<&()>,
        )
        .await
        .unwrap();
    let login = http.get(code.link(&base)).send().await.unwrap();
    assert_eq!(login.status(), 303);
    assert_eq!(login.headers()["location"], "/");
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    assert!(pair.starts_with("lazyboy_session="), "{pair}");
    assert!(!pair.contains(token), "the cookie is not the token");
    let again = http.get(code.link(&base)).send().await.unwrap();
    assert_eq!(again.status(), 401, "a login link works once");
    let page = http
        .get(format!("{base}/"))
        .header("Cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("<title>LazyBoy"));
    let events = http
        .get(format!("{base}/api/events?after=0"))
        .header("Cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);

    // The token never reaches the log file.
    let log = std::fs::read_to_string(home.join(paths::LOGS).join("lazyboyd.log")).unwrap();
    assert!(!log.contains(token));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.0.wait().unwrap().success());
}

/// Starts a daemon on 0.0.0.0 and waits for it to answer on its socket; returns it and its
/// TCP port.
async fn on_all_interfaces(home: &std::path::Path, env: &[(&str, &str)]) -> (KillOnDrop, String) {
    let child = KillOnDrop(
        TestDaemon::command(home)
            .args(["--listen", "0.0.0.0:0"])
            .envs(env.iter().copied())
            .spawn()
            .unwrap(),
    );
    let client = match env.iter().find(|(k, _)| *k == "LAZYBOY_TOKEN") {
        Some((_, token)) => lazyboy::connection::Client::with_token(home.to_owned(), token),
        None => lazyboy::connection::Client::new(home.to_owned()),
    };
    let health: Health =
        lazyboy_tests::wait_for(std::time::Duration::from_secs(20), "health", || {
            let client = client.clone();
            async move { client.get::<Health>("/api/health").await.ok() }
        })
        .await;
    assert_eq!(health.pid, child.0.id());
    let port = health
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    (child, port)
}

/// `lazyboy daemon token` with `args`, run off the test's runtime.
async fn token_cli(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut command = cli(home);
    command.args(["daemon", "token"]).args(args);
    lazyboy_tests::output_of(command).await
}

async fn status_with(http: &reqwest::Client, url: &str, token: &str) -> u16 {
    http.get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_rotated_token_takes_effect_at_once() {
    let home = temp_home();
    let old = token_cli(home.path(), &[]).await;
    let old = String::from_utf8(old.stdout).unwrap().trim().to_owned();
    let (mut child, port) = on_all_interfaces(home.path(), &[]).await;
    let url = format!("http://127.0.0.1:{port}/api/agents");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    assert_eq!(status_with(&http, &url, &old).await, 200);
    // A browser signs in (with the old token in force).
    let client = lazyboy::connection::Client::new(home.path().to_owned());
    let code: lazyboy_protocol::LoginCode = client
        .call(
            lazyboy::connection::Method::POST,
            "/api/auth/login",
            None::<&()>,
        )
        .await
        .unwrap();
    let login = http
        .get(code.link(&format!("http://127.0.0.1:{port}")))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = http
        .get(&url)
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    // Asked without --rotate, the running daemon names the token in force.
    let same = token_cli(home.path(), &[]).await;
    assert_eq!(String::from_utf8(same.stdout).unwrap().trim(), old);

    let rotated = token_cli(home.path(), &["--rotate"]).await;
    assert!(
        rotated.status.success(),
        "{}",
        String::from_utf8_lossy(&rotated.stderr)
    );
    let new = String::from_utf8(rotated.stdout).unwrap().trim().to_owned();
    assert_eq!(new.len(), 48);
    assert_ne!(new, old);
    // Same daemon, no restart: the old token is refused, the new one served.
    assert_eq!(status_with(&http, &url, &old).await, 401);
    assert_eq!(status_with(&http, &url, &new).await, 200);
    let file = home.path().join(paths::TOKEN);
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), new);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A browser signed in under the old token is signed out.
    let page = http
        .get(&url)
        .header("Cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 401);
    assert_eq!(child.0.try_wait().unwrap(), None, "the daemon kept running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.0.wait().unwrap().success());
}

#[tokio::test]
async fn a_token_set_by_lazyboy_token_is_not_rotated_behind_its_back() {
    let home = temp_home();
    let (mut child, port) =
        on_all_interfaces(home.path(), &[("LAZYBOY_TOKEN", "env-token-456")]).await;
    // The person's shell has the variable too: that is how their CLI is let in.
    let mut command = cli(home.path());
    command
        .args(["daemon", "token", "--rotate"])
        .env("LAZYBOY_TOKEN", "env-token-456");
    let rotated = lazyboy_tests::output_of(command).await;
    assert!(!rotated.status.success());
    let stderr = String::from_utf8_lossy(&rotated.stderr);
    assert!(stderr.contains("LAZYBOY_TOKEN"), "{stderr}");
    let url = format!("http://127.0.0.1:{port}/api/agents");
    let http = reqwest::Client::new();
    assert_eq!(status_with(&http, &url, "env-token-456").await, 200);
    assert!(!home.path().join(paths::TOKEN).exists());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.0.wait().unwrap().success());
}
