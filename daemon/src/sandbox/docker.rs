//! The box's container through Docker's API (bollard): find ours by label, create it, start
//! and stop it, run a command in it and collect what it printed.
//!
//! Our container carries the labels `lazyboy.box=1` and `lazyboy.box.name=<name>`; nothing
//! else is ever touched. It is created with `--shm-size=1g` (Chromium's tabs crash with
//! Docker's 64 MiB), its two ports published on the host's 127.0.0.1 only (neither has a
//! password), no privileged mode and no host mounts: its only mount is the named volume
//! holding `/home/box` (profiles and work directories), which outlives the container.

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::{
    ContainerCreateBody, HostConfig, Mount, MountTypeEnum, PortBinding, PortMap,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, StopContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::BoxError;

/// The label every box container carries.
pub const LABEL: &str = "lazyboy.box";
/// The label naming which box (one per daemon configuration; tests run their own).
pub const NAME_LABEL: &str = "lazyboy.box.name";
/// noVNC (websockify) inside the container.
pub const NOVNC_PORT: &str = "6080/tcp";
/// CDP (socat to Chromium's 127.0.0.1:9222) inside the container.
pub const CDP_PORT: &str = "9223/tcp";

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
    /// Published host ports (on 127.0.0.1) of noVNC and CDP, while it runs.
    pub novnc: Option<u16>,
    pub cdp: Option<u16>,
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

/// The image's id, or `None` when it is not there.
pub async fn image_id(docker: &Docker, image: &str) -> Result<Option<String>, BoxError> {
    match tokio::time::timeout(API_TIMEOUT, docker.inspect_image(image)).await {
        Ok(Ok(inspect)) => Ok(inspect.id),
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
    let ports = inspect
        .network_settings
        .and_then(|n| n.ports)
        .unwrap_or_default();
    let port = |key: &str| {
        ports
            .get(key)
            .and_then(|b| b.as_ref())
            .and_then(|b| b.iter().find_map(|b| b.host_port.as_deref()?.parse().ok()))
    };
    Ok(Some(Container {
        id,
        running: state.running.unwrap_or(false),
        status: state
            .status
            .map_or_else(|| "unknown".to_owned(), |s| s.to_string()),
        exit_code: state.exit_code,
        image_id: inspect.image,
        novnc: port(NOVNC_PORT),
        cdp: port(CDP_PORT),
    }))
}

/// Creates the container (not started): labels, shm, loopback-only ports, the volume.
pub async fn create(
    docker: &Docker,
    name: &str,
    image: &str,
    volume: &str,
) -> Result<String, BoxError> {
    let loopback = || {
        Some(vec![PortBinding {
            host_ip: Some("127.0.0.1".into()),
            host_port: Some(String::new()),
        }])
    };
    let port_bindings: PortMap = HashMap::from([
        (NOVNC_PORT.to_owned(), loopback()),
        (CDP_PORT.to_owned(), loopback()),
    ]);
    let body = ContainerCreateBody {
        image: Some(image.to_owned()),
        labels: Some(HashMap::from([
            (LABEL.to_owned(), "1".to_owned()),
            (NAME_LABEL.to_owned(), name.to_owned()),
        ])),
        exposed_ports: Some(HashMap::from([
            (NOVNC_PORT.to_owned(), HashMap::new()),
            (CDP_PORT.to_owned(), HashMap::new()),
        ])),
        host_config: Some(HostConfig {
            shm_size: Some(1 << 30),
            port_bindings: Some(port_bindings),
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
