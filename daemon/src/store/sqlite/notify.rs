//! The notifier's rows on SQLite. One daemon per file (the home's lock), so the lease is
//! always this node's; it is kept so both backends answer the same way.

use lazyboy_protocol::EventBody;
use sqlx::Connection;

use super::Sqlite;
use super::events::insert_into_chat;
use crate::store::notify::{HOME_AGENT, NotifyCursor, OutboxEvent, SubscriptionRow};
use crate::store::{StoreError, now_ms};

const OUTBOX_KINDS: &str = "kind IN ('notification_due', 'notification_sent', \
    'notification_failed', 'notification_skipped')";

impl Sqlite {
    pub(in crate::store) async fn notify_claim(
        &self,
        ttl_ms: i64,
    ) -> Result<Option<NotifyCursor>, StoreError> {
        let now = now_ms();
        let mut writer = self.writer.lock().await;
        let row: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE notify_cursor SET holder = ?1, held_until_ms = ?2 + ?3 \
             WHERE id = 1 AND (holder IS NULL OR holder = ?1 OR held_until_ms < ?2) \
             RETURNING scanned_seq, pending_from",
        )
        .bind(&self.fleet.node)
        .bind(now)
        .bind(ttl_ms)
        .fetch_optional(&mut *writer)
        .await?;
        Ok(row.map(|(scanned_seq, pending_from)| NotifyCursor {
            scanned_seq,
            pending_from,
        }))
    }

    pub(in crate::store) async fn notify_save(
        &self,
        cursor: NotifyCursor,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut writer = self.writer.lock().await;
        let done = sqlx::query(
            "UPDATE notify_cursor SET scanned_seq = MAX(scanned_seq, ?1), pending_from = ?2, \
             held_until_ms = ?3 WHERE id = 1 AND holder = ?4",
        )
        .bind(cursor.scanned_seq)
        .bind(cursor.pending_from)
        .bind(now_ms() + ttl_ms)
        .bind(&self.fleet.node)
        .execute(&mut *writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(in crate::store) async fn notify_events_after(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let sql = format!(
            "SELECT seq, task_id, kind, data FROM events WHERE {OUTBOX_KINDS} AND seq > ?1 \
             ORDER BY seq LIMIT ?2"
        );
        let rows: Vec<(i64, Option<String>, String, String)> = sqlx::query_as(&sql)
            .bind(after)
            .bind(limit)
            .fetch_all(&self.reader)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(seq, task, kind, data)| {
                let data = serde_json::from_str(&data).ok()?;
                Some((seq, task, EventBody::from_parts(&kind, data)?))
            })
            .collect())
    }

    pub(in crate::store) async fn add_subscription(
        &self,
        id: &str,
        endpoint: &str,
        p256dh: &str,
        auth: &str,
        name: Option<&str>,
        host: &str,
    ) -> Result<SubscriptionRow, StoreError> {
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let row: SubscriptionRow = sqlx::query_as(
            "INSERT INTO notify_subscriptions (id, endpoint, p256dh, auth, name, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (endpoint) DO UPDATE SET \
             p256dh = excluded.p256dh, auth = excluded.auth, \
             name = COALESCE(excluded.name, notify_subscriptions.name) \
             RETURNING id, endpoint, p256dh, auth, name, created_at_ms",
        )
        .bind(id)
        .bind(endpoint)
        .bind(p256dh)
        .bind(auth)
        .bind(name)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        let body = EventBody::NotifySubscriptionAdded {
            subscription: row.id.clone(),
            name: row.name.clone(),
            host: host.to_owned(),
        };
        let event = insert_into_chat(&mut tx, HOME_AGENT, &body).await?;
        tx.commit().await?;
        if let Some((event, _)) = event {
            self.bus.publish(event);
        }
        Ok(row)
    }

    pub(in crate::store) async fn subscriptions(&self) -> Result<Vec<SubscriptionRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, endpoint, p256dh, auth, name, created_at_ms FROM notify_subscriptions \
             ORDER BY created_at_ms, id",
        )
        .fetch_all(&self.reader)
        .await?)
    }

    pub(in crate::store) async fn remove_subscription(
        &self,
        id: &str,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let gone = sqlx::query("DELETE FROM notify_subscriptions WHERE id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !gone {
            return Ok(false);
        }
        let body = EventBody::NotifySubscriptionGone {
            subscription: id.to_owned(),
            reason: reason.to_owned(),
        };
        let event = insert_into_chat(&mut tx, HOME_AGENT, &body).await?;
        tx.commit().await?;
        if let Some((event, _)) = event {
            self.bus.publish(event);
        }
        Ok(true)
    }
}
