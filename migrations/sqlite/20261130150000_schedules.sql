-- Schedules: a cron expression that hands an agent the same job at every slot.
-- Removed schedules are deleted outright: the agent's chat thread keeps their history
-- (schedule_added ... schedule_removed events).
CREATE TABLE schedules (
    id             TEXT    PRIMARY KEY,
    agent_id       INTEGER NOT NULL REFERENCES agents (id),
    cron           TEXT    NOT NULL,
    objective      TEXT    NOT NULL,
    paused         INTEGER NOT NULL DEFAULT 0,
    -- A slot missed while the daemon was down is skipped instead of run once at start.
    skip_missed    INTEGER NOT NULL DEFAULT 0,
    -- The next slot, in Unix milliseconds; NULL while paused (or when the expression has
    -- no future slot).
    next_run_at_ms INTEGER,
    last_run_at_ms INTEGER,
    created_at_ms  INTEGER NOT NULL
);
CREATE INDEX schedules_agent ON schedules (agent_id, created_at_ms);
-- The timer asks for the earliest due slot of active schedules.
CREATE INDEX schedules_next_run ON schedules (next_run_at_ms) WHERE next_run_at_ms IS NOT NULL;
