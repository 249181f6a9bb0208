//! The box: one shared Linux desktop in Docker (`box/` builds its image), with a Chromium the
//! agents drive over CDP and a person can take over through noVNC, behind one exclusive lock.
//!
//! [`Sandbox`] owns the container's lifecycle (`docker.rs`: found by label, created on first
//! use, restarted if it died, healthy once CDP answers; it outlives daemon restarts), the
//! lock (`lock.rs`, used through `hold.rs`), the browser (`cdp.rs`, `browser.rs`), commands
//! in the box (`machine.rs`) and the `/novnc/` proxy (`novnc.rs`). Nothing here ever falls
//! back to the host: without Docker every operation is a [`BoxError::Unavailable`] that says
//! why, and `GET /api/box` says the same.
//!
//! The box publishes no port: CDP and VNC are reached only through `port.rs` (`docker exec
//! … box-port`), so nothing but the daemon drives the box's browser. A box made by an older
//! daemon (it publishes them) is retired when this daemon starts and whenever it is found,
//! and an image older than that contract (`lazyboy.box.api` below 2) is refused.
//!
//! Lifecycle changes are serialized by one async mutex; the fast path (a container seen
//! running in the last [`FRESH`]) takes no Docker call at all. One CDP connection is kept
//! per running container and shared ([`cdp::Browser`]).

pub mod browser;
pub mod cdp;
pub mod docker;
mod hold;
mod legacy;
pub mod lock;
pub mod machine;
pub mod novnc;
pub mod port;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use lazyboy_protocol::{BoxState, BoxStatus, EventBody};
use tokio::sync::watch;

use crate::store::{Store, TaskRow};

/// How long a container seen running counts as running without asking Docker again.
const FRESH: Duration = Duration::from_secs(2);
/// How long a start may take until the browser answers.
const START_DEADLINE: Duration = Duration::from_secs(45);

/// Why a box operation failed; the text is for the model and the person.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BoxError {
    #[error("the box is unavailable: {0}. Nothing was run (box tools never fall back to the host)")]
    Unavailable(String),
    #[error(
        "the box image {0} is missing: build it with `lazyboy box build` (or box/build.sh), \
         then retry. Nothing was run"
    )]
    NoImage(String),
    #[error(
        "the box image {0} is older than this daemon (it would publish the browser's and the \
         screen's ports): rebuild it with `lazyboy box build` (or box/build.sh), then retry. \
         Nothing was run"
    )]
    OldImage(String),
    #[error("Docker: {0}")]
    Docker(String),
    #[error("the box did not start: {0}")]
    Start(String),
    #[error("the box's browser: {0}")]
    Browser(String),
    #[error("{0}")]
    Tool(String),
    #[error("stopped while waiting for the box")]
    Cancelled,
}

/// Which box this daemon runs (tests run their own).
#[derive(Debug, Clone)]
pub struct BoxConfig {
    /// The container's name and label value.
    pub name: String,
    pub image: String,
    /// The named volume holding `/home/box`.
    pub volume: String,
}

impl BoxConfig {
    /// `name`/`image` from the config file's `[box]`, overridden by `LAZYBOY_BOX_NAME` and
    /// `LAZYBOY_BOX_IMAGE`; defaults `lazyboy-box` and `lazyboy/box:latest`.
    pub fn new(name: Option<String>, image: Option<String>) -> BoxConfig {
        let env = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
        let name = env("LAZYBOY_BOX_NAME")
            .or(name)
            .unwrap_or_else(|| "lazyboy-box".to_owned());
        let image = env("LAZYBOY_BOX_IMAGE")
            .or(image)
            .unwrap_or_else(|| "lazyboy/box:latest".to_owned());
        BoxConfig {
            volume: format!("{name}-home"),
            name,
            image,
        }
    }
}

/// A running box, as the tools reach it.
#[derive(Debug, Clone)]
pub struct Live {
    pub id: String,
    pub docker: bollard::Docker,
}

/// What is remembered between calls about the running container.
#[derive(Default)]
struct Cache {
    live: Option<(Live, Instant)>,
    /// The profile Chromium shows, as last switched to by us.
    profile: Option<String>,
    /// Agents whose work directory exists in this container run.
    workdirs: HashSet<String>,
    /// The last input (keys, clicks): a screenshot lets the screen settle after it.
    last_input: Option<Instant>,
}

/// The box and its lock.
pub struct Sandbox {
    pub config: BoxConfig,
    store: Store,
    /// How often a waiting tool records a heartbeat.
    pub heartbeat: Duration,
    docker: tokio::sync::Mutex<Option<bollard::Docker>>,
    /// Shared with the start's retirement of an older daemon's box (a task of its own).
    lifecycle: Arc<tokio::sync::Mutex<()>>,
    cache: Mutex<Cache>,
    /// The CDP connection to the running box, shared by every caller.
    browser: tokio::sync::Mutex<Option<Arc<cdp::Browser>>>,
    /// noVNC's files, read out of the container they came from.
    novnc: tokio::sync::Mutex<Option<(String, Arc<novnc::Files>)>>,
    lock: tokio::sync::Mutex<lock::State>,
    lock_changed: watch::Sender<u64>,
    /// The daemon's URL (`http://127.0.0.1:8787/`), for takeover links.
    url: OnceLock<String>,
}

impl Sandbox {
    pub fn new(store: Store, config: BoxConfig, heartbeat: Duration) -> Sandbox {
        Sandbox {
            config,
            store,
            heartbeat,
            docker: tokio::sync::Mutex::new(None),
            lifecycle: Arc::new(tokio::sync::Mutex::new(())),
            cache: Mutex::new(Cache::default()),
            browser: tokio::sync::Mutex::new(None),
            novnc: tokio::sync::Mutex::new(None),
            lock: tokio::sync::Mutex::new(lock::State::default()),
            lock_changed: watch::Sender::new(0),
            url: OnceLock::new(),
        }
    }

    /// Records the daemon's URL (once, at start).
    pub fn set_url(&self, url: &str) {
        let _ = self.url.set(url.to_owned());
    }

    /// Where a person watches and takes over.
    pub fn novnc_link(&self) -> String {
        let base = self.url.get().map_or("", |u| u.trim_end_matches('/'));
        format!("{base}/novnc/")
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connected engine (connecting on first use, and again after a failure).
    async fn docker(&self) -> Result<bollard::Docker, BoxError> {
        let mut slot = self.docker.lock().await;
        if let Some(docker) = slot.as_ref() {
            return Ok(docker.clone());
        }
        let docker = docker::connect().await?;
        *slot = Some(docker.clone());
        Ok(docker)
    }

    /// Forgets what we knew (after a failure or a stop): the next call asks Docker.
    pub async fn forget(&self) {
        *self.cache() = Cache::default();
        *self.browser.lock().await = None;
        *self.docker.lock().await = None;
    }

    /// The CDP connection to `live`: the one kept, unless it ended or goes to another
    /// container (then a new one: a `docker exec`).
    async fn browser(&self, live: &Live) -> Result<Arc<cdp::Browser>, BoxError> {
        let mut slot = self.browser.lock().await;
        if let Some(browser) = slot.as_ref()
            && browser.is_open()
            && browser.container() == live.id
        {
            return Ok(browser.clone());
        }
        let browser = cdp::Browser::connect(&live.docker, &live.id).await?;
        *slot = Some(browser.clone());
        Ok(browser)
    }

    /// Whether the box's browser answers (its health). A connection that does not answer is
    /// dropped, so the next check opens a new one.
    async fn answers(&self, live: &Live) -> bool {
        let Ok(browser) = self.browser(live).await else {
            return false;
        };
        if browser.answers().await {
            return true;
        }
        let mut slot = self.browser.lock().await;
        if slot.as_ref().is_some_and(|b| Arc::ptr_eq(b, &browser)) {
            *slot = None;
        }
        false
    }

    /// The box as it is now.
    pub async fn status(&self) -> BoxStatus {
        let (holder, queue) = self.lock_view().await;
        let mut status = BoxStatus {
            state: BoxState::Unavailable,
            reason: None,
            image: Some(self.config.image.clone()),
            container: None,
            holder,
            queue,
            novnc: None,
        };
        let found = async {
            let docker = self.docker().await?;
            self.image(&docker).await?;
            Ok((docker::find(&docker, &self.config.name).await?, docker))
        };
        match found.await {
            Err(error) => {
                if matches!(error, BoxError::Docker(_)) {
                    *self.docker.lock().await = None;
                }
                status.reason = Some(error.to_string());
            }
            Ok((None, _)) => status.state = BoxState::Absent,
            Ok((Some(container), docker)) => {
                status.container = Some(self.config.name.clone());
                status.state = if !container.running {
                    match container.exit_code {
                        Some(0) | None if container.status != "dead" => BoxState::Stopped,
                        code => {
                            status.reason = Some(format!(
                                "the container is {} (exit code {})",
                                container.status,
                                code.unwrap_or(-1)
                            ));
                            BoxState::Error
                        }
                    }
                } else if container.published.is_empty()
                    && self
                        .answers(&Live {
                            id: container.id.clone(),
                            docker,
                        })
                        .await
                {
                    status.novnc = Some("/novnc/".to_owned());
                    BoxState::Running
                } else {
                    BoxState::Starting
                };
            }
        }
        status
    }

    /// The running box: created, started or restarted as needed, healthy (CDP answers).
    /// `cause` is the task whose call needs it (its thread gets the `box_state` events).
    pub async fn ensure(&self, cause: Option<&TaskRow>) -> Result<Live, BoxError> {
        if let Some(live) = self.fresh() {
            return Ok(live);
        }
        let _one_at_a_time = self.lifecycle.lock().await;
        if let Some(live) = self.fresh() {
            return Ok(live);
        }
        let result = self.bring_up(cause).await;
        if let Err(error) = &result {
            if !matches!(error, BoxError::Unavailable(_) | BoxError::NoImage(_)) {
                self.record_state(cause, BoxState::Error, Some(error.to_string()))
                    .await;
            }
            self.forget().await;
        }
        result
    }

    fn fresh(&self) -> Option<Live> {
        let cache = self.cache();
        let (live, seen) = cache.live.as_ref()?;
        (seen.elapsed() < FRESH).then(|| live.clone())
    }

    /// The configured image, if it is there and keeps this daemon's contract.
    async fn image(&self, docker: &bollard::Docker) -> Result<docker::Image, BoxError> {
        match docker::image(docker, &self.config.image).await? {
            None => Err(BoxError::NoImage(self.config.image.clone())),
            Some(image) if image.api < docker::API => {
                Err(BoxError::OldImage(self.config.image.clone()))
            }
            Some(image) => Ok(image),
        }
    }

    async fn bring_up(&self, cause: Option<&TaskRow>) -> Result<Live, BoxError> {
        let docker = self.docker().await?;
        let image = self.image(&docker).await?.id;
        let mut found = docker::find(&docker, &self.config.name).await?;
        // An older daemon's box publishes CDP and VNC: never use it, even running.
        if let Some(old) = found.take_if(|c| !c.published.is_empty()) {
            docker::retire(&docker, &old).await?;
        }
        let already = found.as_ref().is_some_and(|c| c.running);
        if !already {
            // A stopped box made from an older image is made again; the volume keeps
            // the profiles and work directories.
            if let Some(old) = found.take_if(|c| c.image_id.as_deref() != Some(&image)) {
                docker::remove(&docker, &old.id).await?;
            }
            let id = match found {
                Some(container) => container.id,
                None => {
                    let (name, volume) = (&self.config.name, &self.config.volume);
                    docker::create(&docker, name, &self.config.image, volume).await?
                }
            };
            self.record_state(cause, BoxState::Starting, None).await;
            docker::start(&docker, &id).await?;
            found = docker::find(&docker, &self.config.name).await?;
            let mut cache = self.cache();
            cache.profile = None;
            cache.workdirs.clear();
        }
        let container = found.ok_or_else(|| BoxError::Start("the container vanished".into()))?;
        let live = Live {
            id: container.id,
            docker,
        };
        let deadline = Instant::now() + START_DEADLINE;
        while !self.answers(&live).await {
            if Instant::now() > deadline {
                return Err(BoxError::Start(format!(
                    "its browser did not answer within {} s (see `docker logs {}`)",
                    START_DEADLINE.as_secs(),
                    self.config.name
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !already {
            self.record_state(cause, BoxState::Running, None).await;
        }
        self.cache().live = Some((live.clone(), Instant::now()));
        Ok(live)
    }

    /// The box if it runs now (never starts it): for the person's `/novnc/` and screenshot.
    pub async fn running(&self) -> Result<Live, BoxError> {
        if let Some(live) = self.fresh() {
            return Ok(live);
        }
        let docker = self.docker().await?;
        match docker::find(&docker, &self.config.name).await? {
            Some(c) if c.running && c.published.is_empty() => Ok(Live { id: c.id, docker }),
            Some(c) if c.running => Err(BoxError::Start(format!(
                "the running box was made by an older daemon (it publishes {}); start it \
                 again (`lazyboy box start`) to replace it",
                c.published.join(", ")
            ))),
            _ => Err(BoxError::Tool(
                "the box is not running: start it with `lazyboy box start` (or POST \
                 /api/box/start)"
                    .into(),
            )),
        }
    }

    /// Stops the box, closing Chromium through CDP first so its profile is written out.
    pub async fn stop(&self) -> Result<(), BoxError> {
        let _one_at_a_time = self.lifecycle.lock().await;
        let docker = self.docker().await?;
        let Some(container) = docker::find(&docker, &self.config.name).await? else {
            return Ok(());
        };
        if container.running {
            let close = docker::exec(
                &docker,
                &container.id,
                "root",
                &["box-browser", "--close"],
                None,
                Duration::from_secs(20),
            )
            .await;
            if let Err(error) = close {
                tracing::warn!(%error, "closing the box's browser before the stop failed");
            }
            docker::stop(&docker, &container.id, 10).await?;
        }
        *self.cache() = Cache::default();
        *self.browser.lock().await = None;
        self.record_state(None, BoxState::Stopped, None).await;
        Ok(())
    }

    /// Runs `cmd` in the box as `user`; fails on a non-zero exit with its complaint.
    pub async fn run(
        &self,
        live: &Live,
        user: &str,
        cmd: &[&str],
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> Result<Vec<u8>, BoxError> {
        let out = docker::exec(&live.docker, &live.id, user, cmd, stdin, limit).await?;
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(BoxError::Tool(out.complaint()))
        }
    }

    /// `/home/box/work/<agent>`, created on first use.
    pub async fn workdir(&self, live: &Live, agent: &str) -> Result<String, BoxError> {
        let dir = format!("/home/box/work/{agent}");
        if self.cache().workdirs.contains(agent) {
            return Ok(dir);
        }
        let limit = Duration::from_secs(20);
        self.run(live, "box", &["mkdir", "-p", &dir], None, limit)
            .await?;
        self.cache().workdirs.insert(agent.to_owned());
        Ok(dir)
    }

    /// The box as the machine `box_shell` commands run on.
    pub fn machine(&self, live: &Live) -> machine::BoxMachine {
        machine::BoxMachine {
            container: live.id.clone(),
            docker: live.docker.clone(),
        }
    }

    /// After a crash: kills what command `id` left running in the box (nothing when the box
    /// does not run). How many processes it found.
    pub async fn stop_orphan(&self, id: &str) -> Option<u32> {
        let live = self.running().await.ok()?;
        machine::kill_marked(&live.docker, &live.id, id).await.ok()
    }

    /// Records a `box_state` event in `cause`'s thread, else in the lock holder's.
    async fn record_state(&self, cause: Option<&TaskRow>, state: BoxState, reason: Option<String>) {
        let task = match cause {
            Some(task) => Some(task.clone()),
            None => self
                .lock
                .lock()
                .await
                .holder
                .as_ref()
                .and_then(|h| h.task.clone()),
        };
        let Some(task) = task else { return };
        let body = EventBody::BoxState { state, reason };
        if let Err(error) = self.store.append_to_task(&task, &body).await {
            tracing::warn!(%error, "cannot record the box's state");
        }
    }
}
