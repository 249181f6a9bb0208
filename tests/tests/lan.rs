//! Reaching the dashboard from a phone: `lazyboy daemon start --lan` listens on every
//! interface, and prints for each LAN URL a one-time login link (never the token) and a QR
//! code of it (never `0.0.0.0`); `--tls-cert`/`--tls-key` serve HTTPS (a self-signed
//! certificate made with openssl here, trusted by the test's client), where the session
//! cookie is `Secure` and `__Host-`.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use lazyboy_protocol::Health;
use lazyboy_tests::{cli, output_of, temp_home};

fn stop(home: &std::path::Path) {
    let out = cli(home).args(["daemon", "stop"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// A network namespace of the test's own with loopback and one LAN-like interface (one end of
/// a veth pair, with [`LAN_IP`]), so what the daemon lists and serves on the LAN does not depend on this
/// machine's interfaces. Deleted on drop. Needs root and `ip` (iproute2).
struct Netns(String);

/// The LAN interface's address in [`Netns`].
const LAN_IP: &str = "10.77.0.2";

impl Netns {
    fn new() -> Netns {
        assert!(
            nix::unistd::geteuid().is_root(),
            "this test makes a network namespace with a LAN interface of its own and needs root \
             (CI runs as root)"
        );
        let name = format!("lbt{}", std::process::id());
        let ns = Netns(name.clone());
        for args in [
            vec!["netns", "add", &name],
            vec!["-n", &name, "link", "set", "lo", "up"],
            // A veth pair with both ends inside (these kernels have no `dummy` module).
            vec![
                "-n", &name, "link", "add", "lan0", "type", "veth", "peer", "name", "lan1",
            ],
            vec!["-n", &name, "addr", "add", "10.77.0.2/24", "dev", "lan0"],
            vec!["-n", &name, "link", "set", "lan1", "up"],
            vec!["-n", &name, "link", "set", "lan0", "up"],
        ] {
            let out = Command::new("ip").args(&args).output().unwrap_or_else(|e| {
                panic!("`ip` is needed (apt-get install iproute2; scripts/test does): {e}")
            });
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        }
        ns
    }

    /// `program` run inside the namespace.
    fn command(&self, program: &std::path::Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.0]).arg(program);
        command
    }

    /// `curl ARGS` inside the namespace; its stdout.
    fn curl(&self, args: &[&str]) -> String {
        let out = self
            .command(std::path::Path::new("curl"))
            .arg("-s")
            .args(args)
            .output()
            .expect("curl is needed (scripts/test installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[tokio::test]
async fn daemon_start_lan_prints_one_time_login_links_and_qr_codes() {
    let home = temp_home();
    let ns = Netns::new();
    // The CLI starts the daemon inside the namespace (it stays there); the CLI and the test
    // reach it over the home's socket, which is a file and crosses namespaces.
    let mut start = ns.command(&lazyboy_tests::bin("lazyboy"));
    for (key, value) in cli(home.path()).get_envs() {
        if let Some(value) = value {
            start.env(key, value);
        }
    }
    start.args(["daemon", "start", "--lan"]);
    let out = output_of(start).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token_file = home.path().join("token");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(token.len(), 48, "a token was created");
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(!text.contains("0.0.0.0"), "{text}");
    let status = output_of({
        let mut c = cli(home.path());
        c.args(["daemon", "status", "--json"]);
        c
    })
    .await;
    let health: Health = serde_json::from_slice(&status.stdout).unwrap();
    assert!(
        health.url.starts_with("http://127.0.0.1:"),
        "{}",
        health.url
    );
    let port = health.url.trim_end_matches('/').rsplit(':').next().unwrap();
    let url = format!("http://{LAN_IP}:{port}/");
    assert_eq!(
        health.lan_urls,
        std::slice::from_ref(&url),
        "the namespace's one LAN address"
    );
    assert!(
        !text.contains(&token),
        "the token is never printed in a URL: {text}"
    );
    // A login link, followed by its QR code (half blocks).
    let prefix = format!("on the LAN: {url}login?code=");
    let at = text
        .find(&prefix)
        .unwrap_or_else(|| panic!("{prefix} not in {text}"));
    let line = text[at..].lines().next().unwrap();
    let link = line.trim_start_matches("on the LAN: ").to_owned();
    let qr: Vec<&str> = text[at + line.len() + 1..].lines().take(12).collect();
    assert!(
        qr.iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| " █▀▄".contains(c))),
        "{qr:#?}"
    );
    let code =
        |args: &[&str]| ns.curl(&[&["-o", "/dev/null", "-w", "%{http_code}"], args].concat());
    assert_eq!(
        code(&[&format!("{url}api/state")]),
        "401",
        "without a session"
    );
    // The link signs the phone in: a cookie, then the page.
    let headers = ns.curl(&["-D", "-", "-o", "/dev/null", &link]);
    assert!(headers.starts_with("HTTP/1.1 303"), "{headers}");
    let cookie = headers
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no cookie: {headers}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(code(&["-H", &format!("cookie: {cookie}"), &url]), "200");
    assert_eq!(code(&[&link]), "401", "{link} works once");
    // The machine itself keeps reaching it by the loopback URL (with the token: the
    // listener is not loopback-only any more).
    let auth = format!("authorization: Bearer {token}");
    assert_eq!(
        code(&["-H", &auth, &format!("{}api/health", health.url)]),
        "200"
    );
    stop(home.path());
}

#[tokio::test]
async fn tls_serves_the_dashboard_over_https() {
    let home = temp_home();
    let (cert, key) = (home.path().join("cert.pem"), home.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is needed for this test (scripts/test installs it)");
    assert!(made.status.success(), "{made:?}");
    let out = output_of({
        let mut c = cli(home.path());
        c.args(["daemon", "start", "--json", "--tls-cert"])
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key);
        c
    })
    .await;
    assert!(out.status.success(), "{out:?}");
    let health: Health = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        health.url.starts_with("https://127.0.0.1:"),
        "{}",
        health.url
    );
    let trusted = reqwest::Certificate::from_pem(&std::fs::read(&cert).unwrap()).unwrap();
    let https = reqwest::Client::builder()
        .add_root_certificate(trusted)
        .build()
        .unwrap();
    let token = std::fs::read_to_string(home.path().join("token")).unwrap();
    let token = token.trim();
    let page = https
        .get(&health.url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("importmap"));
    // Under TLS the session cookie is only ever sent back over HTTPS, to this host.
    let code: lazyboy_protocol::LoginCode = lazyboy::connection::Client::new(home.path().into())
        .call(
            lazyboy::connection::Method::POST,
            "/api/auth/login",
            None::<&()>,
        )
        .await
        .unwrap();
    let no_redirects = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&std::fs::read(&cert).unwrap()).unwrap(),
        )
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = no_redirects
        .get(code.link(&health.url))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("__Host-lazyboy_session="), "{cookie}");
    assert!(
        cookie.contains("; Secure") && cookie.contains("Path=/"),
        "{cookie}"
    );
    let api: Health = https
        .get(format!("{}api/health", health.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(api.pid, health.pid);
    // Plain HTTP to the HTTPS port gets no page.
    let plain = health.url.replace("https://", "http://");
    let refused = reqwest::get(&plain).await;
    assert!(
        refused.map(|r| r.status() != 200).unwrap_or(true),
        "plain HTTP served the page"
    );
    stop(home.path());
}

#[tokio::test]
async fn service_install_lan_runs_the_daemon_on_all_interfaces() {
    let home = temp_home();
    let out = output_of({
        let mut c = cli(home.path());
        c.args([
            "service",
            "install",
            "--print",
            "--lan",
            "--platform",
            "linux",
        ]);
        c
    })
    .await;
    let unit = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{unit}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(unit.contains("\"--listen\" \"0.0.0.0:0\""), "{unit}");
}
