//! The notifier's rows, once for both engines: the cursor row is a lease, so one daemon of
//! the fleet sends (on SQLite the home's lock makes it always this node's; it is kept so both
//! answer the same way). Its times come from the database's clock, like the tasks' leases.

use lazyboy_protocol::EventBody;

use super::events::insert_into_chat;
use crate::store::dialect::{read, write, write_one};
use crate::store::notify::{HOME_AGENT, NotifyCursor, OutboxEvent, SubscriptionRow};
use crate::store::{Store, StoreError, int, now_ms};

const OUTBOX_KINDS: &str = "kind IN ('notification_due', 'notification_sent', \
    'notification_failed', 'notification_skipped')";

impl Store {
    /// Takes or renews the notifier's lease for this node (`ttl_ms` from now); the cursor
    /// if this node holds it, `None` if another live daemon does.
    pub async fn notify_claim(&self, ttl_ms: i64) -> Result<Option<NotifyCursor>, StoreError> {
        let node = &self.fleet().node;
        let row: Option<(i64, i64)> = write_one!(self, |c| {
            let sql = format!(
                "UPDATE notify_cursor SET holder = $1, held_until_ms = {now} + $2 \
                 WHERE id = 1 AND (holder IS NULL OR holder = $1 OR held_until_ms < {now}) \
                 RETURNING scanned_seq, pending_from",
                now = d::NOW_MS
            );
            let row = sqlx::query_as(&sql)
                .bind(node)
                .bind(ttl_ms)
                .fetch_optional(c)
                .await?;
            (row, [])
        });
        Ok(row.map(|(scanned_seq, pending_from)| NotifyCursor {
            scanned_seq,
            pending_from,
        }))
    }

    /// Moves the cursor and renews the lease, only while this node holds it (`false`: it
    /// lost it, and must stop sending).
    pub async fn notify_save(&self, cursor: NotifyCursor, ttl_ms: i64) -> Result<bool, StoreError> {
        let node = &self.fleet().node;
        let done = write_one!(self, |c| {
            let sql = format!(
                "UPDATE notify_cursor SET scanned_seq = {greatest}(scanned_seq, $1), \
                 pending_from = $2, held_until_ms = {now} + $3 WHERE id = 1 AND holder = $4",
                greatest = d::GREATEST,
                now = d::NOW_MS
            );
            let done = sqlx::query(&sql)
                .bind(cursor.scanned_seq)
                .bind(cursor.pending_from)
                .bind(ttl_ms)
                .bind(node)
                .execute(c)
                .await?;
            (done.rows_affected() == 1, [])
        });
        Ok(done)
    }

    /// Up to `limit` outbox events (`notification_*`) after `after`, in seq order.
    pub async fn notify_events_after(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let sql = format!(
            "SELECT seq, task_id, kind, CAST(data AS TEXT) FROM events WHERE {OUTBOX_KINDS} \
             AND seq > $1 ORDER BY seq LIMIT $2"
        );
        let rows: Vec<(i64, Option<String>, String, String)> = read!(self, |c| {
            sqlx::query_as(&sql)
                .bind(after)
                .bind(int(limit))
                .fetch_all(c)
                .await?
        });
        Ok(rows
            .into_iter()
            .filter_map(|(seq, task, kind, data)| {
                let data = serde_json::from_str(&data).ok()?;
                Some((seq, task, EventBody::from_parts(&kind, data)?))
            })
            .collect())
    }

    /// Stores a subscription (the same endpoint again replaces its keys and name, keeping
    /// its id) and logs `notify_subscription_added`, in one transaction.
    pub async fn add_subscription(
        &self,
        id: &str,
        endpoint: &str,
        p256dh: &str,
        auth: &str,
        name: Option<&str>,
        host: &str,
    ) -> Result<SubscriptionRow, StoreError> {
        Ok(write!(self, |tx| {
            let row: SubscriptionRow = sqlx::query_as(
                "INSERT INTO notify_subscriptions (id, endpoint, p256dh, auth, name, \
                 created_at_ms) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (endpoint) DO UPDATE SET \
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
            let event = insert_into_chat(&mut *tx, HOME_AGENT, &body).await?;
            (row, event.map(|(event, _)| event))
        }))
    }

    /// Every subscription, oldest first.
    pub async fn subscriptions(&self) -> Result<Vec<SubscriptionRow>, StoreError> {
        Ok(read!(self, |c| {
            sqlx::query_as(
                "SELECT id, endpoint, p256dh, auth, name, created_at_ms \
                 FROM notify_subscriptions ORDER BY created_at_ms, id",
            )
            .fetch_all(c)
            .await?
        }))
    }

    /// Removes a subscription and logs `notify_subscription_gone` with `reason`; `false` if
    /// there was none.
    pub async fn remove_subscription(&self, id: &str, reason: &str) -> Result<bool, StoreError> {
        Ok(write!(self, |tx| {
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
            let event = insert_into_chat(&mut *tx, HOME_AGENT, &body).await?;
            (true, event.map(|(event, _)| event))
        }))
    }
}
