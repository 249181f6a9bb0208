//! Nodes: every daemon that uses the database, with its heartbeat (renewed with the leases)
//! and the tasks it runs. A node's name is taken by one live process at a time: a fresh
//! `instance` id per process, and a name whose heartbeat is fresh under another instance is
//! refused ([`StoreError::NodeInUse`]), so two daemons never resume each other's tasks as
//! their own.

use lazyboy_protocol::Node;

use super::StoreError;

/// Who holds a node name another process asked for ([`StoreError::NodeInUse`]): enough for
/// the runtime to tell a live holder (refused at once) from one killed with `-9` (whose
/// heartbeat stands still until it goes stale), and to name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHolder {
    pub name: String,
    pub instance: String,
    pub pid: i64,
    pub url: String,
    pub heartbeat_at_ms: i64,
}

/// A node as the store keeps it, with its running tasks.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct NodeRow {
    pub name: String,
    pub pid: i64,
    pub url: String,
    pub version: String,
    pub started_at_ms: i64,
    pub heartbeat_at_ms: i64,
    pub stopped_at_ms: Option<i64>,
    /// Its running (or recovering) tasks, oldest first.
    #[sqlx(skip)]
    pub running: Vec<String>,
}

impl NodeRow {
    /// The API's view: alive while its heartbeat is younger than a lease and it has not
    /// stopped.
    pub fn to_api(&self, now_ms: i64, lease_ttl_ms: i64) -> Node {
        Node {
            alive: self.stopped_at_ms.is_none() && now_ms - self.heartbeat_at_ms < lease_ttl_ms,
            name: self.name.clone(),
            pid: u32::try_from(self.pid).unwrap_or(0),
            url: self.url.clone(),
            version: self.version.clone(),
            started_at_ms: self.started_at_ms,
            heartbeat_at_ms: self.heartbeat_at_ms,
            stopped_at_ms: self.stopped_at_ms,
            running: self.running.clone(),
        }
    }
}

super::facade! {
    /// Records this daemon as its node (`instance` a fresh id for this process); refused
    /// while another live instance holds the name.
    pub async fn register_node(
        &self,
        instance: &str,
        pid: u32,
        url: &str,
        version: &str,
    ) -> Result<(), StoreError>;

    /// Renews this node's heartbeat.
    pub async fn node_heartbeat(&self, instance: &str) -> Result<(), StoreError>;

    /// Marks this node stopped (a clean shutdown).
    pub async fn node_stopped(&self, instance: &str) -> Result<(), StoreError>;

    /// Every node, by name, with its running tasks.
    pub async fn nodes(&self) -> Result<Vec<NodeRow>, StoreError>;
}
