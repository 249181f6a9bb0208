-- The team: per-agent workspaces, task leases, subagents.

-- NULL: the default workspace, <home>/workspaces/<name>.
ALTER TABLE agents ADD COLUMN workspace TEXT;

-- A running task's lease: the loop renews it every 10 s; a client shows the agent alive only
-- while the lease holds (heartbeat under 30 s old). NULL when the task is not running.
ALTER TABLE tasks ADD COLUMN heartbeat_at_ms INTEGER;
ALTER TABLE tasks ADD COLUMN lease_expires_at_ms INTEGER;

-- Subagents are tasks with a parent; `tools` is the JSON list of tool names they may use
-- (NULL: every tool a subagent may have).
ALTER TABLE tasks ADD COLUMN parent_id TEXT REFERENCES tasks (id);
ALTER TABLE tasks ADD COLUMN tools TEXT;
CREATE INDEX tasks_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;
