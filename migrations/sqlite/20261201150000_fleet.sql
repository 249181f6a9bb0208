-- Several daemons, one database (issue 14). On SQLite one daemon owns the file (the home's
-- lock), but the columns and the claim protocol are the same on both backends.

-- The node whose daemon claimed the task (set by the claim, kept after the task leaves
-- `running` as "where it last ran"); only that node renews its lease or changes its state
-- while it runs. NULL for tasks from before this migration.
ALTER TABLE tasks ADD COLUMN owner TEXT;
-- A stop asked for by a daemon that does not run the task; its owner sees it when it renews
-- the lease, and ends the task `cancelled`.
ALTER TABLE tasks ADD COLUMN stop_requested_at_ms INTEGER;
-- The queue, oldest first: what a claim scans.
CREATE INDEX tasks_queue ON tasks (created_at_ms, id) WHERE state = 'queued';

-- An agent pinned to a node: only that node's daemon claims its tasks. NULL: any node.
ALTER TABLE agents ADD COLUMN node TEXT;

-- Each daemon that ever used the database, with its heartbeat (renewed with the leases).
CREATE TABLE nodes (
    name            TEXT    PRIMARY KEY,
    -- A fresh id per process: a second daemon taking a live node's name is refused.
    instance        TEXT    NOT NULL,
    pid             INTEGER NOT NULL,
    url             TEXT    NOT NULL,
    version         TEXT    NOT NULL,
    started_at_ms   INTEGER NOT NULL,
    heartbeat_at_ms INTEGER NOT NULL,
    -- Set by a clean shutdown; NULL while it runs (or since it died).
    stopped_at_ms   INTEGER
);
