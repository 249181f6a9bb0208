-- Retention (issue 23): the log stays append-only except for one rewrite, the bulky body of
-- an old tool result replaced by a stub. The runtime opens that door only inside its own
-- transaction (a row in events_rewrite, removed before the commit), and only for a
-- tool_result's data: seq, kind, thread, agent, task and time never change, and nothing is
-- ever deleted.
CREATE TABLE events_rewrite (
    id INTEGER PRIMARY KEY CHECK (id = 1)
);

DROP TRIGGER events_append_only_update;
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
WHEN NOT EXISTS (SELECT 1 FROM events_rewrite)
    OR OLD.kind IS NOT 'tool_result'
    OR NEW.seq IS NOT OLD.seq
    OR NEW.kind IS NOT OLD.kind
    OR NEW.thread_id IS NOT OLD.thread_id
    OR NEW.agent_id IS NOT OLD.agent_id
    OR NEW.task_id IS NOT OLD.task_id
    OR NEW.at_ms IS NOT OLD.at_ms
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
