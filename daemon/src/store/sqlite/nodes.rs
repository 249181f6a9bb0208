//! Nodes on SQLite: one daemon per file (the home's lock), so registering never finds the
//! name in use by a live process; the table is kept for `GET /api/nodes`.

use super::Sqlite;
use crate::store::nodes::NodeRow;
use crate::store::{StoreError, now_ms};

impl Sqlite {
    pub(in crate::store) async fn register_node(
        &self,
        instance: &str,
        pid: u32,
        url: &str,
        version: &str,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let mut writer = self.writer.lock().await;
        sqlx::query(
            "INSERT INTO nodes (name, instance, pid, url, version, started_at_ms, \
             heartbeat_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) \
             ON CONFLICT (name) DO UPDATE SET instance = excluded.instance, pid = excluded.pid, \
             url = excluded.url, version = excluded.version, \
             started_at_ms = excluded.started_at_ms, heartbeat_at_ms = excluded.heartbeat_at_ms, \
             stopped_at_ms = NULL",
        )
        .bind(&self.fleet.node)
        .bind(instance)
        .bind(i64::from(pid))
        .bind(url)
        .bind(version)
        .bind(now)
        .execute(&mut *writer)
        .await?;
        Ok(())
    }

    pub(in crate::store) async fn node_heartbeat(&self, instance: &str) -> Result<(), StoreError> {
        let mut writer = self.writer.lock().await;
        sqlx::query("UPDATE nodes SET heartbeat_at_ms = ? WHERE name = ? AND instance = ?")
            .bind(now_ms())
            .bind(&self.fleet.node)
            .bind(instance)
            .execute(&mut *writer)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn node_stopped(&self, instance: &str) -> Result<(), StoreError> {
        let mut writer = self.writer.lock().await;
        sqlx::query("UPDATE nodes SET stopped_at_ms = ? WHERE name = ? AND instance = ?")
            .bind(now_ms())
            .bind(&self.fleet.node)
            .bind(instance)
            .execute(&mut *writer)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn nodes(&self) -> Result<Vec<NodeRow>, StoreError> {
        let mut nodes: Vec<NodeRow> = sqlx::query_as(
            "SELECT name, pid, url, version, started_at_ms, heartbeat_at_ms, stopped_at_ms \
             FROM nodes ORDER BY name",
        )
        .fetch_all(&self.reader)
        .await?;
        let running: Vec<(String, String)> = sqlx::query_as(
            "SELECT owner, id FROM tasks WHERE state IN ('running', 'recovering') \
             AND owner IS NOT NULL ORDER BY created_at_ms, id",
        )
        .fetch_all(&self.reader)
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
