//! The two listeners: the local socket (file mode 0600, for the CLI) and TCP (for browsers).
//! Both are served with `api::peers::Peer` as each connection's connect info.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use interprocess::local_socket::tokio::{Listener as SocketListener, Stream as SocketStream};
use interprocess::local_socket::traits::tokio::Listener as _;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};

/// The local socket, as an axum listener.
pub struct LocalSocket {
    listener: SocketListener,
    path: PathBuf,
}

impl LocalSocket {
    /// Binds `path`, replacing a stale socket file left by a killed daemon. The caller must
    /// hold the home's lock: that is what makes the old file stale rather than someone else's.
    pub fn bind(path: &Path) -> io::Result<LocalSocket> {
        match std::fs::remove_file(path) {
            Ok(()) => tracing::info!(path = %path.display(), "removed a stale socket"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let name = path.to_fs_name::<GenericFilePath>()?;
        let listener = ListenerOptions::new().name(name).create_tokio()?;
        // The umask already made it private; this makes the mode exact on every platform.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        Ok(LocalSocket {
            listener,
            path: path.to_owned(),
        })
    }
}

impl axum::serve::Listener for LocalSocket {
    type Io = SocketStream;
    type Addr = PathBuf;

    async fn accept(&mut self) -> (SocketStream, PathBuf) {
        loop {
            match self.listener.accept().await {
                Ok(stream) => return (stream, self.path.clone()),
                Err(error) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!(%error, "local socket accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<PathBuf> {
        Ok(self.path.clone())
    }
}

/// The TCP listener, with Nagle off on every connection (events are small writes that must
/// leave at once).
pub struct Tcp(pub tokio::net::TcpListener);

impl axum::serve::Listener for Tcp {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.0).await;
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "set_nodelay failed");
        }
        (stream, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}
