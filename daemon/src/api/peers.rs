//! Who is on the other end of a local-socket connection, as the kernel says (`SO_PEERCRED`,
//! `getpeereid` on macOS): only its user id counts, and only to refuse another user's
//! connection (the home is 0700, so another user cannot reach the socket at all; this is the
//! second line). Whether the caller may act is decided per request by the credential it
//! sends ([`super::auth`]), never by which process it seems to be: a process can lend its
//! connection to another (`SCM_RIGHTS`) or be gone by the time anyone looks.

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use interprocess::local_socket::tokio::Stream as SocketStream;
use interprocess::local_socket::traits::StreamCommon as _;

/// The credentials of a local-socket peer, read once when the connection is accepted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peer {
    /// The peer's effective user id (`None`: the kernel did not say).
    pub uid: Option<u32>,
}

impl Peer {
    fn of(stream: &SocketStream) -> Peer {
        Peer {
            uid: stream.peer_creds().ok().and_then(|creds| creds.euid()),
        }
    }
}

impl Connected<IncomingStream<'_, super::listeners::LocalSocket>> for Peer {
    fn connect_info(stream: IncomingStream<'_, super::listeners::LocalSocket>) -> Peer {
        Peer::of(stream.io())
    }
}
