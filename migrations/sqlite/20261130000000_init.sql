-- The foundation: agents, their threads, and the append-only event log.
CREATE TABLE agents (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    instructions  TEXT    NOT NULL DEFAULT '',
    model         TEXT,
    created_at_ms INTEGER NOT NULL,
    -- Agents are soft-deleted: the log keeps pointing at them, and the name is free again.
    deleted_at_ms INTEGER
);
CREATE UNIQUE INDEX agents_live_name ON agents (name) WHERE deleted_at_ms IS NULL;

CREATE TABLE threads (
    id            TEXT    PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    kind          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX threads_agent ON threads (agent_id);

-- The one source of order and replay. seq is global and never reused (AUTOINCREMENT).
CREATE TABLE events (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT    NOT NULL REFERENCES threads (id),
    agent_id  INTEGER NOT NULL REFERENCES agents (id),
    task_id   TEXT,
    kind      TEXT    NOT NULL,
    data      TEXT    NOT NULL CHECK (json_valid(data)),
    at_ms     INTEGER NOT NULL
);
CREATE INDEX events_agent_seq ON events (agent_id, seq);

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
