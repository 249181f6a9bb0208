-- Notifications: the PostgreSQL side of SQLite's 20261202170000_notify.sql (same tables,
-- same index name). The holder is the one daemon of the fleet that sends.
CREATE TABLE notify_cursor (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    scanned_seq   BIGINT  NOT NULL,
    pending_from  BIGINT  NOT NULL,
    holder        TEXT,
    held_until_ms BIGINT
);
INSERT INTO notify_cursor (id, scanned_seq, pending_from)
    SELECT 1, COALESCE(MAX(seq), 0), COALESCE(MAX(seq), 0) FROM events;

CREATE TABLE notify_subscriptions (
    id            TEXT   PRIMARY KEY,
    endpoint      TEXT   NOT NULL UNIQUE,
    p256dh        TEXT   NOT NULL,
    auth          TEXT   NOT NULL,
    name          TEXT,
    created_at_ms BIGINT NOT NULL
);

CREATE INDEX events_notifications ON events (seq)
    WHERE kind IN ('notification_due', 'notification_sent', 'notification_failed',
                   'notification_skipped');
