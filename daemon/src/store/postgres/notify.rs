//! The notifier's rows on PostgreSQL: the cursor row is a lease, so one daemon of the fleet
//! sends. Its times come from the database server's clock, like the tasks' leases.

use lazyboy_protocol::EventBody;
use sqlx::PgConnection;

use super::{DB_NOW_MS, Postgres, int};
use crate::store::events::{LiveEvent, Target, encode, render};
use crate::store::notify::{HOME_AGENT, NotifyCursor, OutboxEvent, SubscriptionRow};
use crate::store::{StoreError, now_ms};

const OUTBOX_KINDS: &str = "kind IN ('notification_due', 'notification_sent', \
    'notification_failed', 'notification_skipped')";

impl Postgres {
    pub(in crate::store) async fn notify_claim(
        &self,
        ttl_ms: i64,
    ) -> Result<Option<NotifyCursor>, StoreError> {
        let sql = format!(
            "UPDATE notify_cursor SET holder = $1, held_until_ms = {DB_NOW_MS} + $2 \
             WHERE id = 1 AND (holder IS NULL OR holder = $1 OR held_until_ms < {DB_NOW_MS}) \
             RETURNING scanned_seq, pending_from"
        );
        let row: Option<(i64, i64)> = sqlx::query_as(&sql)
            .bind(&self.fleet.node)
            .bind(ttl_ms)
            .fetch_optional(&self.pool)
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
        let sql = format!(
            "UPDATE notify_cursor SET scanned_seq = GREATEST(scanned_seq, $1), \
             pending_from = $2, held_until_ms = {DB_NOW_MS} + $3 WHERE id = 1 AND holder = $4"
        );
        let done = sqlx::query(&sql)
            .bind(cursor.scanned_seq)
            .bind(cursor.pending_from)
            .bind(ttl_ms)
            .bind(&self.fleet.node)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(in crate::store) async fn notify_events_after(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let sql = format!(
            "SELECT seq, task_id, kind, data::text FROM events WHERE {OUTBOX_KINDS} \
             AND seq > $1 ORDER BY seq LIMIT $2"
        );
        let rows: Vec<(i64, Option<String>, String, String)> = sqlx::query_as(&sql)
            .bind(after)
            .bind(int(limit))
            .fetch_all(&self.pool)
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
        let mut tx = self.begin().await?;
        let row: SubscriptionRow = sqlx::query_as(
            "INSERT INTO notify_subscriptions (id, endpoint, p256dh, auth, name, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (endpoint) DO UPDATE SET \
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
        let event = insert_into_home(&mut tx, &body).await?;
        tx.commit().await?;
        self.feed.committed(event);
        Ok(row)
    }

    pub(in crate::store) async fn subscriptions(&self) -> Result<Vec<SubscriptionRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, endpoint, p256dh, auth, name, created_at_ms FROM notify_subscriptions \
             ORDER BY created_at_ms, id",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    pub(in crate::store) async fn remove_subscription(
        &self,
        id: &str,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let gone = sqlx::query("DELETE FROM notify_subscriptions WHERE id = $1")
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
        let event = insert_into_home(&mut tx, &body).await?;
        tx.commit().await?;
        self.feed.committed(event);
        Ok(true)
    }
}

/// Appends `body` to the home agent's chat thread on a transaction that holds the log's
/// lock; nothing when that agent was removed.
async fn insert_into_home(
    conn: &mut PgConnection,
    body: &EventBody,
) -> Result<Option<LiveEvent>, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let row: Option<(i64, i64, String)> = sqlx::query_as(
        "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         SELECT t.id, a.id, NULL, $1, $2::json, $3 \
         FROM agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
         WHERE a.name = $4 AND a.deleted_at_ms IS NULL \
         RETURNING seq, agent_id, thread_id",
    )
    .bind(kind)
    .bind(data.get())
    .bind(at_ms)
    .bind(HOME_AGENT)
    .fetch_optional(conn)
    .await?;
    let Some((seq, agent_id, thread)) = row else {
        return Ok(None);
    };
    let target = Target {
        agent_id,
        agent: HOME_AGENT,
        thread: &thread,
        task: None,
    };
    Ok(Some(render(seq, kind, &target, at_ms, &data)?))
}
