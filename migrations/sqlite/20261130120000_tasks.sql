-- Tasks: one objective handed to an agent, worked in its own thread.
CREATE TABLE tasks (
    id            TEXT    PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    thread_id     TEXT    NOT NULL REFERENCES threads (id),
    objective     TEXT    NOT NULL,
    workspace     TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    verdict       TEXT,
    final_message TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE INDEX tasks_agent ON tasks (agent_id, created_at_ms);
CREATE INDEX tasks_state ON tasks (state);

-- A task's history is read back in order to rebuild its conversation.
CREATE INDEX events_task_seq ON events (task_id, seq) WHERE task_id IS NOT NULL;
