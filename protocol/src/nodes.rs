//! `GET /api/nodes`: the daemons that share a database, each with its heartbeat and the
//! tasks it runs.

use serde::{Deserialize, Serialize};

/// One daemon (a node) of the fleet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Node {
    /// Its name (`lazyboyd --node`, default the host name).
    pub name: String,
    pub pid: u32,
    /// Its dashboard URL, as it reported it.
    pub url: String,
    pub version: String,
    pub started_at_ms: i64,
    /// Renewed with its tasks' leases (every third of the lease TTL).
    pub heartbeat_at_ms: i64,
    /// Set by a clean shutdown.
    #[serde(default)]
    pub stopped_at_ms: Option<i64>,
    /// Running and heartbeating within a lease TTL.
    pub alive: bool,
    /// The tasks it runs (running or recovering), oldest first.
    #[serde(default)]
    pub running: Vec<String>,
}

/// `GET /api/nodes`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeList {
    /// The node that answered.
    pub this: String,
    pub nodes: Vec<Node>,
}
