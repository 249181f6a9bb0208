//! Nodes, once for both engines: registering reads the name's row inside its write (on
//! PostgreSQL under the log's lock), so two daemons starting with one name cannot both pass;
//! on SQLite the home's lock already proves any other holder dead (`d::EXCLUSIVE`), and the
//! table is kept for `GET /api/nodes`. Heartbeats are the database's clock.

use crate::store::dialect::{read, write, write_one};
use crate::store::nodes::{NodeHolder, NodeRow};
use crate::store::{Store, StoreError};

impl Store {
    /// Records this daemon as its node (`instance` a fresh id for this process); refused
    /// while another live instance holds the name.
    pub async fn register_node(
        &self,
        instance: &str,
        pid: u32,
        url: &str,
        version: &str,
    ) -> Result<(), StoreError> {
        let fleet = self.fleet();
        write!(self, |tx| {
            let sql = format!(
                "SELECT instance <> $2 AND stopped_at_ms IS NULL AND NOT {exclusive} \
                 AND heartbeat_at_ms > {now} - $3, instance, pid, url, heartbeat_at_ms \
                 FROM nodes WHERE name = $1",
                exclusive = d::EXCLUSIVE,
                now = d::NOW_MS
            );
            let held: Option<(bool, String, i64, String, i64)> = sqlx::query_as(&sql)
                .bind(&fleet.node)
                .bind(instance)
                .bind(fleet.lease_ttl_ms)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some((true, instance, pid, url, heartbeat_at_ms)) = held {
                return Err(StoreError::NodeInUse(NodeHolder {
                    name: fleet.node.clone(),
                    instance,
                    pid,
                    url,
                    heartbeat_at_ms,
                }));
            }
            let sql = format!(
                "INSERT INTO nodes (name, instance, pid, url, version, started_at_ms, \
                 heartbeat_at_ms) VALUES ($1, $2, $3, $4, $5, {now}, {now}) \
                 ON CONFLICT (name) DO UPDATE SET instance = excluded.instance, \
                 pid = excluded.pid, url = excluded.url, version = excluded.version, \
                 started_at_ms = excluded.started_at_ms, \
                 heartbeat_at_ms = excluded.heartbeat_at_ms, stopped_at_ms = NULL",
                now = d::NOW_MS
            );
            sqlx::query(&sql)
                .bind(&fleet.node)
                .bind(instance)
                .bind(i64::from(pid))
                .bind(url)
                .bind(version)
                .execute(&mut *tx)
                .await?;
            ((), [])
        });
        Ok(())
    }

    /// Renews this node's heartbeat.
    pub async fn node_heartbeat(&self, instance: &str) -> Result<(), StoreError> {
        self.mark_node("heartbeat_at_ms", instance).await
    }

    /// Marks this node stopped (a clean shutdown).
    pub async fn node_stopped(&self, instance: &str) -> Result<(), StoreError> {
        self.mark_node("stopped_at_ms", instance).await
    }

    /// Sets `column` of this node's row to the database's now.
    async fn mark_node(&self, column: &str, instance: &str) -> Result<(), StoreError> {
        let node = &self.fleet().node;
        write_one!(self, |c| {
            let sql = format!(
                "UPDATE nodes SET {column} = {} WHERE name = $1 AND instance = $2",
                d::NOW_MS
            );
            sqlx::query(&sql)
                .bind(node)
                .bind(instance)
                .execute(c)
                .await?;
            ((), [])
        });
        Ok(())
    }

    /// Every node, by name, with its running tasks.
    pub async fn nodes(&self) -> Result<Vec<NodeRow>, StoreError> {
        let (mut nodes, running): (Vec<NodeRow>, Vec<(String, String)>) = read!(self, |c| {
            let nodes = sqlx::query_as(
                "SELECT name, pid, url, version, started_at_ms, heartbeat_at_ms, \
                 stopped_at_ms FROM nodes ORDER BY name",
            )
            .fetch_all(c)
            .await?;
            let running = sqlx::query_as(
                "SELECT owner, id FROM tasks WHERE state IN ('running', 'recovering') \
                 AND owner IS NOT NULL ORDER BY created_at_ms, id",
            )
            .fetch_all(c)
            .await?;
            (nodes, running)
        });
        for node in &mut nodes {
            node.running = running
                .iter()
                .filter(|(owner, _)| *owner == node.name)
                .map(|(_, id)| id.clone())
                .collect();
        }
        Ok(nodes)
    }
}
