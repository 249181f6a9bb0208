//! Agents cannot use the daemon's API: a connection from a process an agent's command
//! started is refused with 403, on both listeners, whatever it asks.
//!
//! Who is calling is decided once per connection, when it is accepted ([`Peer`] is its
//! axum connect info), not per request:
//! - the local socket: the peer's pid from its credentials (`SO_PEERCRED`); it is an
//!   agent's process when its environment carries a command's marker (`LAZYBOYD_COMMAND_ID`,
//!   which also catches what an earlier daemon's agents left running), or when its parent
//!   chain reaches the daemon (the daemon is their child subreaper, so double-forked
//!   processes stay its descendants);
//! - loopback TCP: the client's socket is found in `/proc/net/tcp{,6}` by the connection's
//!   address pair, and refused when one of the daemon's descendants holds it.
//!
//! Fast path: a daemon with no child process has no agent process to refuse, and nothing
//! more is read. A process group check would add nothing: a process cannot leave its group
//! without staying a descendant, and the groups the registry knows die with the daemon.
//! Linux only (`/proc`); elsewhere nothing is refused.

use std::net::SocketAddr;

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use interprocess::local_socket::tokio::Stream as SocketStream;
use interprocess::local_socket::traits::StreamCommon as _;

use super::error::ApiError;
use crate::confine::procs;

/// Who is on the other end of a connection, as far as the API cares.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    /// Why the peer is an agent's process (`None`: it is not, or cannot be told).
    pub agent: Option<String>,
}

/// A connection that can say which process is on its other end.
pub trait PeerIdentity {
    fn agent_process(&self) -> Option<String>;
}

impl PeerIdentity for SocketStream {
    fn agent_process(&self) -> Option<String> {
        let pid = self.peer_creds().ok()?.pid()?;
        local_agent(pid)
    }
}

impl PeerIdentity for tokio::net::TcpStream {
    fn agent_process(&self) -> Option<String> {
        tcp_agent(self.peer_addr().ok()?, self.local_addr().ok()?)
    }
}

impl PeerIdentity for tokio_rustls::server::TlsStream<tokio::net::TcpStream> {
    fn agent_process(&self) -> Option<String> {
        self.get_ref().0.agent_process()
    }
}

impl Connected<IncomingStream<'_, super::listeners::LocalSocket>> for Peer {
    fn connect_info(stream: IncomingStream<'_, super::listeners::LocalSocket>) -> Peer {
        Peer::of(stream.io())
    }
}

impl Connected<IncomingStream<'_, super::listeners::Tcp>> for Peer {
    fn connect_info(stream: IncomingStream<'_, super::listeners::Tcp>) -> Peer {
        Peer::of(stream.io())
    }
}

impl Connected<IncomingStream<'_, super::tls::TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, super::tls::TlsListener>) -> Peer {
        Peer::of(stream.io())
    }
}

impl Peer {
    fn of(io: &impl PeerIdentity) -> Peer {
        let agent = io.agent_process();
        if let Some(why) = &agent {
            tracing::warn!(%why, "refusing a connection from an agent's process");
        }
        Peer { agent }
    }
}

/// The middleware: 403 for every request on a connection from an agent's process.
pub async fn refuse_agents(
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    match peer.agent {
        Some(why) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_agent",
            format!(
                "agents cannot use the daemon's API: this connection comes from a process an \
                 agent started ({why}); ask the person instead"
            ),
        )
        .into_response(),
        None => next.run(request).await,
    }
}

fn daemon_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(0)
}

/// Why local process `pid` is an agent's, if it is.
fn local_agent(pid: i32) -> Option<String> {
    let me = daemon_pid();
    if procs::has_marker(pid) {
        return Some(format!("process {pid} carries an agent command's marker"));
    }
    if !procs::children(me).is_empty() && pid != me && procs::descends_from(pid, me) {
        return Some(format!("process {pid} descends from the daemon"));
    }
    None
}

/// Why the client of the TCP connection `peer` → `local` is an agent's process, if it is.
fn tcp_agent(peer: SocketAddr, local: SocketAddr) -> Option<String> {
    let descendants = procs::descendants(daemon_pid());
    if descendants.is_empty() {
        return None;
    }
    // Not found: the client is not on this machine (or already gone).
    let inode = procs::tcp_inode(peer, local)?;
    let pid = procs::holder(&descendants, inode)?;
    Some(format!(
        "process {pid}, started by an agent's command, holds the client socket"
    ))
}
