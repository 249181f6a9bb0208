//! The servers the browser and reach tests share: a plain-HTTP page server of the test's own,
//! and the daemon on every interface over HTTPS. Below both test files, so neither names the
//! other for them.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::Health;
use lazyboy_tests::browser::free_port;
use lazyboy_tests::{KillOnDrop, TestDaemon, wait_for};

/// A plain-HTTP server on 127.0.0.1 (or `bind`) for the test's own pages: it serves `dir`
/// and appends each request's `Cookie` header to `dir/cookies.txt`.
pub async fn other_server(dir: &Path, bind: &str) -> (KillOnDrop, String) {
    let script = r#"
import http.server, os, sys
root, port, bind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def do_GET(self):
        with open(os.path.join(root, "cookies.txt"), "a") as f:
            f.write((self.headers.get("Cookie") or "-") + "\n")
        return super().do_GET()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer((bind, port), Handler).serve_forever()
"#;
    let port = free_port();
    let child = KillOnDrop(
        std::process::Command::new("python3")
            .args(["-c", script])
            .arg(dir)
            .arg(port.to_string())
            .arg(bind)
            .spawn()
            .unwrap(),
    );
    let base = format!("http://{bind}:{port}");
    let http = reqwest::Client::new();
    wait_for(Duration::from_secs(10), "the test's page server", || {
        let probe = http.get(format!("{base}/")).send();
        async move { probe.await.ok().map(|_| ()) }
    })
    .await;
    let _ = std::fs::remove_file(dir.join("cookies.txt"));
    (child, base)
}

/// A daemon on every interface over HTTPS, with a certificate (openssl, self-signed) that
/// names its LAN addresses. Returns it and its health.
pub async fn on_all_interfaces_tls(home: &Path) -> (KillOnDrop, Health) {
    let addresses: Vec<String> = lan_addresses();
    let san = std::iter::once("DNS:localhost".to_owned())
        .chain(std::iter::once("IP:127.0.0.1".to_owned()))
        .chain(addresses.iter().map(|ip| format!("IP:{ip}")))
        .collect::<Vec<_>>()
        .join(",");
    let (cert, key) = (home.join("cert.pem"), home.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext"])
        .arg(format!("subjectAltName={san}"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is needed for this test (scripts/test installs it)");
    assert!(made.status.success(), "{made:?}");
    let child = KillOnDrop(
        TestDaemon::command(home)
            .args(["--listen", "0.0.0.0:0", "--tls-cert"])
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .spawn()
            .unwrap(),
    );
    let client = lazyboy::connection::Client::new(home.to_owned());
    let health: Health = wait_for(Duration::from_secs(20), "the TLS daemon", || {
        let client = client.clone();
        async move { client.get::<Health>("/api/health").await.ok() }
    })
    .await;
    (child, health)
}

/// This machine's IPv4 addresses other than loopback.
fn lan_addresses() -> Vec<String> {
    nix::ifaddrs::getifaddrs()
        .unwrap()
        .filter_map(|i| Some(i.address?.as_sockaddr_in()?.ip().to_string()))
        .filter(|ip| !ip.starts_with("127."))
        .collect()
}

/// Stops a daemon started by [`on_all_interfaces_tls`] cleanly.
pub fn stop(mut child: KillOnDrop) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.0.wait().unwrap().success());
}
