//! The daemon's one way to the box's browser (CDP) and screen (VNC): `docker exec -i -u root
//! <box> box-port cdp|vnc`, a byte stream on the command's stdin and stdout (`box/README.md`).
//!
//! Nothing in the box listens for either on a TCP port and the container publishes none, so
//! no process on the host (an agent's command included) can drive the browser or watch the
//! screen around the box's lock: reaching them takes the Docker API, whose socket an agent's
//! commands must not have (a rule of the host sandbox's, not of this module). Inside the box, `box-port` runs as root only; the
//! agents' user there (`box`) reaches neither. Going through the engine's API rather than a
//! socket on the host also keeps a remote engine (`DOCKER_HOST=tcp://…`) working as is.
//!
//! A stream ends when either side closes it; dropping a [`Port`] (both halves) closes the
//! exec's stdin, and `box-port` then exits.

use std::pin::Pin;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWrite;

use super::BoxError;

/// What `box-port` leads to.
#[derive(Debug, Clone, Copy)]
pub enum Service {
    /// Chromium's CDP through box-relay: NUL-ended JSON messages, browser target.
    Cdp,
    /// A fresh x11vnc for one viewer: RFB.
    Vnc,
}

impl Service {
    fn arg(self) -> &'static str {
        match self {
            Service::Cdp => "cdp",
            Service::Vnc => "vnc",
        }
    }
}

type Output = Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// One open `box-port` stream.
pub struct Port {
    pub reader: Reader,
    /// The command's stdin.
    pub writer: Pin<Box<dyn AsyncWrite + Send>>,
}

/// The command's stdout, chunk by chunk; what it said on stderr is kept for error messages.
pub struct Reader {
    output: Output,
    stderr: Vec<u8>,
}

/// How much of `box-port`'s stderr is kept (a socat complaint is one line).
const STDERR_CAP: usize = 4096;

impl Reader {
    /// The next chunk of stdout; `None` once the command's output has ended.
    pub async fn next(&mut self) -> Option<Result<Bytes, BoxError>> {
        loop {
            match self.output.next().await? {
                Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                    return Some(Ok(message));
                }
                Ok(LogOutput::StdErr { message }) => {
                    let room = STDERR_CAP.saturating_sub(self.stderr.len());
                    self.stderr
                        .extend_from_slice(&message[..room.min(message.len())]);
                }
                Ok(LogOutput::StdIn { .. }) => {}
                Err(error) => return Some(Err(BoxError::Docker(error.to_string()))),
            }
        }
    }

    /// What `box-port` printed on stderr (why it could not connect, say).
    pub fn complaint(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_owned()
    }
}

/// Opens `box-port <service>` in container `id`.
pub async fn open(docker: &Docker, id: &str, service: Service) -> Result<Port, BoxError> {
    let options = CreateExecOptions {
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        user: Some("root"),
        cmd: Some(vec!["box-port", service.arg()]),
        ..Default::default()
    };
    let open = async {
        let created = docker.create_exec(id, options).await?;
        docker
            .start_exec(&created.id, None::<StartExecOptions>)
            .await
    };
    let started = tokio::time::timeout(std::time::Duration::from_secs(10), open)
        .await
        .map_err(|_| BoxError::Docker("docker exec box-port did not start within 10 s".into()))?
        .map_err(|e| BoxError::Docker(format!("docker exec box-port: {e}")))?;
    match started {
        StartExecResults::Attached { output, input } => Ok(Port {
            reader: Reader {
                output,
                stderr: Vec::new(),
            },
            writer: input,
        }),
        StartExecResults::Detached => Err(BoxError::Docker(
            "docker exec box-port started detached".into(),
        )),
    }
}
