//! A real headless Chromium under its own chromedriver (the Debian packages `chromium` and
//! `chromium-driver`, which `scripts/test` installs), for the dashboard suites and bench.
//!
//! Missing, it fails naming the packages: it never skips. Each [`Browser`] has a fresh
//! profile and its own chromedriver, which leads its own process group: dropping the browser
//! kills the whole group, so no Chromium outlives a test. Chrome DevTools Protocol commands
//! go through chromedriver's `goog/cdp/execute` (viewport emulation, blocking URLs, the
//! manifest and installability checks).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::wait_for;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long anything gets to show; generous for 2 busy cores.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The two viewports every dashboard test runs at: a phone and a laptop.
pub const SIZES: [Viewport; 2] = [
    Viewport {
        width: 390,
        height: 844,
        mobile: true,
    },
    Viewport {
        width: 1280,
        height: 800,
        mobile: false,
    },
];

#[derive(Debug, Clone, Copy)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
    pub mobile: bool,
}

impl Viewport {
    /// `390x844`, for names and messages.
    pub fn name(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }
}

pub struct Browser {
    pub client: Client,
    webdriver: String,
    session: String,
    http: reqwest::Client,
    driver: DriverProcess,
    profile: TempDir,
}

impl Browser {
    pub async fn start() -> Browser {
        for (binary, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
            assert!(
                Path::new(binary).is_file(),
                "{binary} is missing: the dashboard tests need a real browser. Install it with \
                 `apt-get install -y chromium chromium-driver` (scripts/test does; package \
                 `{package}`)"
            );
        }
        let profile = tempfile::Builder::new()
            .prefix("lbchrome")
            .tempdir_in("/tmp")
            .unwrap();
        let port = free_port();
        let log = profile.path().join("chromedriver.log");
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER}: {e}"));
        let mut driver = DriverProcess(child);
        let webdriver = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        wait_for(DEADLINE, "chromedriver to be ready", || {
            if let Some(status) = driver.0.try_wait().unwrap() {
                panic!(
                    "chromedriver exited with {status}:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            let status = http.get(format!("{webdriver}/status")).send();
            async move {
                let body: Value = status.await.ok()?.json().await.ok()?;
                (body["value"]["ready"] == true).then_some(())
            }
        })
        .await;
        let mut args: Vec<String> = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,800",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        args.push(format!(
            "--user-data-dir={}",
            profile.path().join("profile").display()
        ));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
            "goog:loggingPrefs": { "browser": "ALL" },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&webdriver)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "chromedriver could not start {CHROMIUM}: {e}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        let session = client.session_id().await.unwrap().unwrap();
        Browser {
            client,
            webdriver,
            session,
            http,
            driver,
            profile,
        }
    }

    /// Sends a Chrome DevTools Protocol command; returns its result.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        let url = format!(
            "{}/session/{}/goog/cdp/execute",
            self.webdriver, self.session
        );
        let body = json!({ "cmd": cmd, "params": params });
        let response = self.http.post(url).json(&body).send().await.unwrap();
        let value: Value = response.json().await.unwrap();
        assert!(
            value["value"].get("error").is_none(),
            "CDP {cmd} failed: {value}"
        );
        value["value"].clone()
    }

    /// Emulates `size` (a phone's is mobile, with touch).
    pub async fn set_viewport(&self, size: Viewport) {
        self.cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": size.width, "height": size.height, "deviceScaleFactor": 1,
                   "mobile": size.mobile}),
        )
        .await;
        self.cdp(
            "Emulation.setTouchEmulationEnabled",
            json!({"enabled": size.mobile}),
        )
        .await;
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub async fn eval(&self, script: &str, args: Vec<Value>) -> Value {
        match self.client.execute(script, args).await {
            Ok(value) => value,
            Err(e) => panic!(
                "script failed: {e}\n{script}\nconsole:\n{}",
                self.console().await
            ),
        }
    }

    /// Polls `script` (a function body) until it returns something other than null, false
    /// or undefined; returns that. At the deadline, panics with `what` and the page's text.
    pub async fn wait_js(&self, what: &str, script: &str) -> Value {
        let give_up = Instant::now() + DEADLINE;
        loop {
            let value = self.client.execute(script, Vec::new()).await;
            match value {
                Ok(Value::Null | Value::Bool(false)) | Err(_) => {}
                Ok(value) => return value,
            }
            if Instant::now() > give_up {
                panic!(
                    "timed out after {DEADLINE:?} waiting for {what}; the page shows:\n{}\n\
                     console:\n{}",
                    self.text().await,
                    self.console().await
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The page's visible text.
    pub async fn text(&self) -> String {
        match self
            .client
            .execute(
                "return document.body ? document.body.innerText : ''",
                vec![],
            )
            .await
        {
            Ok(Value::String(text)) => text,
            other => format!("({other:?})"),
        }
    }

    /// What the page logged to its console so far (chromedriver's browser log).
    pub async fn console(&self) -> String {
        let url = format!("{}/session/{}/se/log", self.webdriver, self.session);
        let Ok(response) = self
            .http
            .post(url)
            .json(&json!({"type": "browser"}))
            .send()
            .await
        else {
            return String::new();
        };
        let value: Value = response.json().await.unwrap_or_default();
        value["value"]
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| format!("{} {}", e["level"], e["message"]))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    /// Clicks the element at `xpath` as a pointer does (retrying only a stale element).
    pub async fn click(&self, xpath: &str) {
        let give_up = Instant::now() + DEADLINE;
        loop {
            let element = match self.client.find(Locator::XPath(xpath)).await {
                Ok(element) => element,
                Err(_) if Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                    continue;
                }
                Err(e) => panic!(
                    "finding {xpath}: {e}; the page shows:\n{}",
                    self.text().await
                ),
            };
            match element.click().await {
                Ok(()) => return,
                Err(e)
                    if (e.is_stale_element_reference()
                        || e.to_string().contains("not interactable")
                        || e.to_string().contains("intercepted"))
                        && Instant::now() < give_up =>
                {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Err(e) => panic!(
                    "clicking {xpath}: {e}; the page shows:\n{}",
                    self.text().await
                ),
            }
        }
    }

    /// Types `text` into the element at `xpath`.
    pub async fn type_into(&self, xpath: &str, text: &str) {
        let element = self.client.find(Locator::XPath(xpath)).await.unwrap();
        element.send_keys(text).await.unwrap();
    }

    /// Writes a PNG of the viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// The browser's DevTools, spoken directly (other targets, events).
    pub async fn devtools(&self) -> crate::devtools::Devtools {
        crate::devtools::Devtools::connect(&self.profile.path().join("profile")).await
    }

    /// The browser's profile directory (for files a test writes beside it).
    pub fn scratch(&self) -> PathBuf {
        self.profile.path().to_owned()
    }

    /// Ends the session (Chromium quits), then stops chromedriver.
    pub async fn close(self) {
        let _ = self.client.close().await;
        drop(self.driver);
    }
}

/// chromedriver, leader of its own process group; the whole group is killed on drop.
struct DriverProcess(Child);

impl Drop for DriverProcess {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// A port nothing listens on right now (the kernel's pick, released for the caller).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Where the dashboard's screenshots go: `target/screenshots/`, or with
/// `LAZYBOY_SCREENSHOTS=docs` the committed ones the README links (a run then refreshes them;
/// an ordinary run leaves the tree clean).
pub fn screenshot_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match std::env::var("LAZYBOY_SCREENSHOTS").as_deref() {
        Ok("docs") => root.join("docs/screenshots"),
        _ => root.join("target/screenshots"),
    }
}
