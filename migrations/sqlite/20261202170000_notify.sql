-- Notifications (daemon/src/notify/). The outbox is events (notification_due, _sent,
-- _failed, _skipped); these tables hold what is state, not history.

-- Where the notifier is: every source event up to scanned_seq has its notification_due
-- events; no delivery recorded before pending_from can still be pending. One row. The
-- holder (a node name) is the one daemon that sends, while held_until_ms lasts. A database
-- that predates notifications starts at its end: nothing from before is sent.
CREATE TABLE notify_cursor (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    scanned_seq   INTEGER NOT NULL,
    pending_from  INTEGER NOT NULL,
    holder        TEXT,
    held_until_ms INTEGER
);
INSERT INTO notify_cursor (id, scanned_seq, pending_from)
    SELECT 1, COALESCE(MAX(seq), 0), COALESCE(MAX(seq), 0) FROM events;

-- Browsers subscribed to Web Push. The keys are the browser's (what a payload is encrypted
-- to); the daemon's VAPID key is never here (it is a file in the home).
CREATE TABLE notify_subscriptions (
    id            TEXT    PRIMARY KEY,
    endpoint      TEXT    NOT NULL UNIQUE,
    p256dh        TEXT    NOT NULL,
    auth          TEXT    NOT NULL,
    name          TEXT,
    created_at_ms INTEGER NOT NULL
);

-- The outbox's events, read at start to find the deliveries still owed.
CREATE INDEX events_notifications ON events (seq)
    WHERE kind IN ('notification_due', 'notification_sent', 'notification_failed',
                   'notification_skipped');
