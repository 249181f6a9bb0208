//! Nodes on PostgreSQL: registering reads the name's row under the log's lock, so two
//! daemons starting with one name cannot both pass; heartbeats are the server's clock.

use super::{DB_NOW_MS, Postgres};
use crate::store::StoreError;
use crate::store::nodes::{NodeHolder, NodeRow};

impl Postgres {
    pub(in crate::store) async fn register_node(
        &self,
        instance: &str,
        pid: u32,
        url: &str,
        version: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let sql = format!(
            "SELECT instance <> $2 AND stopped_at_ms IS NULL \
             AND heartbeat_at_ms > {DB_NOW_MS} - $3, instance, pid, url, heartbeat_at_ms \
             FROM nodes WHERE name = $1"
        );
        let held: Option<(bool, String, i64, String, i64)> = sqlx::query_as(&sql)
            .bind(&self.fleet.node)
            .bind(instance)
            .bind(self.fleet.lease_ttl_ms)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some((true, instance, pid, url, heartbeat_at_ms)) = held {
            return Err(StoreError::NodeInUse(NodeHolder {
                name: self.fleet.node.clone(),
                instance,
                pid,
                url,
                heartbeat_at_ms,
            }));
        }
        let sql = format!(
            "INSERT INTO nodes (name, instance, pid, url, version, started_at_ms, \
             heartbeat_at_ms) VALUES ($1, $2, $3, $4, $5, {DB_NOW_MS}, {DB_NOW_MS}) \
             ON CONFLICT (name) DO UPDATE SET instance = excluded.instance, pid = excluded.pid, \
             url = excluded.url, version = excluded.version, \
             started_at_ms = excluded.started_at_ms, heartbeat_at_ms = excluded.heartbeat_at_ms, \
             stopped_at_ms = NULL"
        );
        sqlx::query(&sql)
            .bind(&self.fleet.node)
            .bind(instance)
            .bind(i64::from(pid))
            .bind(url)
            .bind(version)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(in crate::store) async fn node_heartbeat(&self, instance: &str) -> Result<(), StoreError> {
        let sql = format!(
            "UPDATE nodes SET heartbeat_at_ms = {DB_NOW_MS} WHERE name = $1 AND instance = $2"
        );
        sqlx::query(&sql)
            .bind(&self.fleet.node)
            .bind(instance)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn node_stopped(&self, instance: &str) -> Result<(), StoreError> {
        let sql = format!(
            "UPDATE nodes SET stopped_at_ms = {DB_NOW_MS} WHERE name = $1 AND instance = $2"
        );
        sqlx::query(&sql)
            .bind(&self.fleet.node)
            .bind(instance)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn nodes(&self) -> Result<Vec<NodeRow>, StoreError> {
        let mut nodes: Vec<NodeRow> = sqlx::query_as(
            "SELECT name, pid, url, version, started_at_ms, heartbeat_at_ms, stopped_at_ms \
             FROM nodes ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        let running: Vec<(String, String)> = sqlx::query_as(
            "SELECT owner, id FROM tasks WHERE state IN ('running', 'recovering') \
             AND owner IS NOT NULL ORDER BY created_at_ms, id",
        )
        .fetch_all(&self.pool)
        .await?;
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
