-- Each agent's private memory, searchable with FTS5. Every read filters by agent_id.
CREATE TABLE memories (
    id            INTEGER PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    key           TEXT,
    text          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX memories_agent_key ON memories (agent_id, key) WHERE key IS NOT NULL;
CREATE INDEX memories_agent ON memories (agent_id);

CREATE VIRTUAL TABLE memories_fts USING fts5 (text, key, content = 'memories', content_rowid = 'id');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, key) VALUES (new.id, new.text, coalesce(new.key, ''));
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, key)
    VALUES ('delete', old.id, old.text, coalesce(old.key, ''));
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, key)
    VALUES ('delete', old.id, old.text, coalesce(old.key, ''));
    INSERT INTO memories_fts (rowid, text, key) VALUES (new.id, new.text, coalesce(new.key, ''));
END;
