//! The box's container through Docker's API (bollard): find ours by label, create it, start
//! and stop it, run a command in it and collect what it printed, read files out of it.
//!
//! Our container carries the labels `lazyboy.box=1` and `lazyboy.box.name=<name>`; nothing
//! else is ever touched. It is created with `--shm-size=1g` (Chromium's tabs crash with
//! Docker's 64 MiB), **no published port** (CDP and VNC have no password; the daemon reaches
//! them through `port.rs`, over `docker exec`), no privileged mode and no host mounts: its
//! only mount is the named volume holding `/home/box` (profiles and work directories), which
//! outlives the container. A container that publishes a port was made by an older daemon
//! ([`Container::published`]); it is retired, never used.

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountTypeEnum, PortMap};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder,
    ListContainersOptionsBuilder, StopContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::BoxError;

/// The label every box container carries.
pub const LABEL: &str = "lazyboy.box";
/// The label naming which box (one per daemon configuration; tests run their own).
pub const NAME_LABEL: &str = "lazyboy.box.name";
/// The image's label naming the contract it keeps with the daemon (`box/README.md`).
pub const API_LABEL: &str = "lazyboy.box.api";
/// The contract this daemon speaks: 2 = no published port, CDP and VNC through `box-port`.
pub const API: u32 = 2;

/// Longest a single API call may take before the engine counts as down.
const API_TIMEOUT: Duration = Duration::from_secs(10);

/// What the box's container looks like to us.
#[derive(Debug, Clone)]
pub struct Container {
    pub id: String,
    pub running: bool,
    /// Docker's word for it: created, running, exited, dead, ...
    pub status: String,
    pub exit_code: Option<i64>,
    /// The image id it was created from.
    pub image_id: Option<String>,
    /// The ports it publishes on the host (`6080/tcp -> 127.0.0.1:49153`): none for ours;
    /// an older daemon's box published noVNC and CDP.
    pub published: Vec<String>,
}

/// The box image as the daemon needs to know it.
#[derive(Debug, Clone)]
pub struct Image {
    pub id: String,
    /// Its `lazyboy.box.api` label (0 when it has none: an image older than the label).
    pub api: u32,
}

/// What a command run with [`exec`] did.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: Option<i64>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// stderr (else stdout) as text, for error messages.
    pub fn complaint(&self) -> String {
        let text = if self.stderr.is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        String::from_utf8_lossy(text).trim().to_owned()
    }
}

/// Connects to the engine named by `DOCKER_HOST` (default: the local socket) and agrees on
/// an API version with it. Fails when nothing answers.
pub async fn connect() -> Result<Docker, BoxError> {
    let docker = Docker::connect_with_defaults().map_err(|e| unavailable(&e))?;
    match tokio::time::timeout(Duration::from_secs(3), docker.negotiate_version()).await {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(error)) => Err(unavailable(&error)),
        Err(_) => Err(BoxError::Unavailable(
            "the Docker engine did not answer within 3 s".into(),
        )),
    }
}

fn unavailable(error: &bollard::errors::Error) -> BoxError {
    let host =
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    BoxError::Unavailable(format!(
        "no Docker engine answers at {host} ({error}); install and start Docker (on Debian, \
         scripts/ensure-docker as root), then retry"
    ))
}

fn api(error: bollard::errors::Error) -> BoxError {
    BoxError::Docker(error.to_string())
}

async fn timed<T>(
    fut: impl std::future::Future<Output = Result<T, bollard::errors::Error>>,
) -> Result<T, BoxError> {
    match tokio::time::timeout(API_TIMEOUT, fut).await {
        Ok(result) => result.map_err(api),
        Err(_) => Err(BoxError::Docker(
            "the Docker engine did not answer within 10 s".into(),
        )),
    }
}

/// The image's id and contract, or `None` when it is not there.
pub async fn image(docker: &Docker, image: &str) -> Result<Option<Image>, BoxError> {
    match tokio::time::timeout(API_TIMEOUT, docker.inspect_image(image)).await {
        Ok(Ok(inspect)) => {
            let api = inspect
                .config
                .and_then(|c| c.labels)
                .and_then(|l| l.get(API_LABEL).and_then(|v| v.trim().parse().ok()))
                .unwrap_or(0);
            Ok(inspect.id.map(|id| Image { id, api }))
        }
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        })) => Ok(None),
        Ok(Err(error)) => Err(api(error)),
        Err(_) => Err(BoxError::Docker("inspecting the image timed out".into())),
    }
}

/// Our container named `name`, found by its labels.
pub async fn find(docker: &Docker, name: &str) -> Result<Option<Container>, BoxError> {
    let filters = HashMap::from([(
        "label",
        vec![format!("{LABEL}=1"), format!("{NAME_LABEL}={name}")],
    )]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let list = timed(docker.list_containers(Some(options))).await?;
    let Some(id) = list.into_iter().find_map(|c| c.id) else {
        return Ok(None);
    };
    let inspect = timed(docker.inspect_container(
        &id,
        None::<bollard::query_parameters::InspectContainerOptions>,
    ))
    .await?;
    let state = inspect.state.unwrap_or_default();
    // What it asked for and what it has (a stopped container shows only the former).
    let mut published = bindings(inspect.host_config.and_then(|h| h.port_bindings));
    published.extend(bindings(inspect.network_settings.and_then(|n| n.ports)));
    published.sort();
    published.dedup();
    Ok(Some(Container {
        id,
        running: state.running.unwrap_or(false),
        status: state
            .status
            .map_or_else(|| "unknown".to_owned(), |s| s.to_string()),
        exit_code: state.exit_code,
        image_id: inspect.image,
        published,
    }))
}

/// `port -> ip:port` for every binding to a host port.
fn bindings(map: Option<PortMap>) -> Vec<String> {
    let mut out = Vec::new();
    for (port, list) in map.unwrap_or_default() {
        for binding in list.unwrap_or_default() {
            let ip = binding.host_ip.unwrap_or_default();
            let host = binding.host_port.unwrap_or_default();
            // An empty host port in the configuration still means "publish it" (Docker
            // picks one): an older daemon's box asked so.
            out.push(format!("{port} -> {ip}:{host}"));
        }
    }
    out
}

/// Creates the container (not started): labels, shm, the volume; no port published.
pub async fn create(
    docker: &Docker,
    name: &str,
    image: &str,
    volume: &str,
) -> Result<String, BoxError> {
    let body = ContainerCreateBody {
        image: Some(image.to_owned()),
        labels: Some(HashMap::from([
            (LABEL.to_owned(), "1".to_owned()),
            (NAME_LABEL.to_owned(), name.to_owned()),
        ])),
        host_config: Some(HostConfig {
            shm_size: Some(1 << 30),
            // Nothing on the host's ports, whatever the image exposes.
            port_bindings: Some(PortMap::new()),
            publish_all_ports: Some(false),
            privileged: Some(false),
            mounts: Some(vec![Mount {
                target: Some("/home/box".into()),
                source: Some(volume.to_owned()),
                typ: Some(MountTypeEnum::VOLUME),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    let created = timed(docker.create_container(Some(options), body)).await?;
    Ok(created.id)
}

pub async fn start(docker: &Docker, id: &str) -> Result<(), BoxError> {
    timed(docker.start_container(id, None::<bollard::query_parameters::StartContainerOptions>))
        .await
}

/// `docker stop -t secs`: box-start's SIGTERM handler closes Chromium through CDP first.
pub async fn stop(docker: &Docker, id: &str, secs: i32) -> Result<(), BoxError> {
    let options = StopContainerOptionsBuilder::new().t(secs).build();
    match tokio::time::timeout(
        Duration::from_secs(u64::try_from(secs).unwrap_or(10) + 10),
        docker.stop_container(id, Some(options)),
    )
    .await
    {
        Ok(Ok(())) => Ok(()),
        // 304: it was not running.
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 304, ..
        })) => Ok(()),
        Ok(Err(error)) => Err(api(error)),
        Err(_) => Err(BoxError::Docker("stopping the container timed out".into())),
    }
}

/// Retires a box made by an older daemon (it publishes CDP and VNC without a password):
/// closes its browser through `box-browser --close` so the profile is written out, stops it
/// and removes it. The volume stays, so the next box has the same profiles and work.
pub async fn retire(docker: &Docker, container: &Container) -> Result<(), BoxError> {
    tracing::warn!(
        container = %container.id,
        ports = ?container.published,
        "retiring a box made by an older daemon: it publishes ports"
    );
    if container.running {
        let close = ["box-browser", "--close"];
        let limit = Duration::from_secs(20);
        if let Err(error) = exec(docker, &container.id, "root", &close, None, limit).await {
            tracing::warn!(%error, "closing the old box's browser failed");
        }
        stop(docker, &container.id, 10).await?;
    }
    remove(docker, &container.id).await
}

/// The files under `path` in the container as one tar archive (at most `cap` bytes).
pub async fn archive(
    docker: &Docker,
    id: &str,
    path: &str,
    cap: usize,
) -> Result<Vec<u8>, BoxError> {
    let options = DownloadFromContainerOptionsBuilder::new()
        .path(path)
        .build();
    let read = async {
        let mut stream = docker.download_from_container(id, Some(options));
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk.map_err(api)?);
            if out.len() > cap {
                return Err(BoxError::Docker(format!(
                    "{path} in the box is over {cap} bytes"
                )));
            }
        }
        Ok(out)
    };
    match tokio::time::timeout(API_TIMEOUT, read).await {
        Ok(result) => result,
        Err(_) => Err(BoxError::Docker(format!(
            "reading {path} from the box timed out"
        ))),
    }
}

/// Removes the container (the volume stays).
pub async fn remove(docker: &Docker, id: &str) -> Result<(), BoxError> {
    let options = bollard::query_parameters::RemoveContainerOptionsBuilder::new()
        .force(true)
        .build();
    timed(docker.remove_container(id, Some(options))).await
}

/// Runs `cmd` in the container as `user`, feeding it `stdin`, and collects its output; gives
/// up after `limit` (the process may still run inside: callers that care kill it by marker).
pub async fn exec(
    docker: &Docker,
    id: &str,
    user: &str,
    cmd: &[&str],
    stdin: Option<&[u8]>,
    limit: Duration,
) -> Result<Output, BoxError> {
    let options = CreateExecOptions {
        attach_stdin: Some(stdin.is_some()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        user: Some(user),
        cmd: Some(cmd.to_vec()),
        ..Default::default()
    };
    let run = async {
        let created = docker.create_exec(id, options).await.map_err(api)?;
        let started = docker
            .start_exec(&created.id, None::<StartExecOptions>)
            .await
            .map_err(api)?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        if let StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        {
            if let Some(bytes) = stdin {
                input
                    .write_all(bytes)
                    .await
                    .map_err(|e| BoxError::Docker(format!("writing to the command: {e}")))?;
                input
                    .shutdown()
                    .await
                    .map_err(|e| BoxError::Docker(format!("closing the command's stdin: {e}")))?;
            }
            drop(input);
            while let Some(chunk) = output.next().await {
                match chunk.map_err(api)? {
                    bollard::container::LogOutput::StdErr { message } => {
                        stderr.extend_from_slice(&message);
                    }
                    other => stdout.extend_from_slice(&other.into_bytes()),
                }
            }
        }
        let inspect = docker.inspect_exec(&created.id).await.map_err(api)?;
        Ok(Output {
            code: inspect.exit_code,
            stdout,
            stderr,
        })
    };
    match tokio::time::timeout(limit, run).await {
        Ok(result) => result,
        Err(_) => Err(BoxError::Docker(format!(
            "`{}` in the box did not finish within {} s",
            cmd.join(" "),
            limit.as_secs()
        ))),
    }
}
