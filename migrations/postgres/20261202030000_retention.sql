-- Retention (issue 23), the counterpart of sqlite/20261202030000_retention.sql: the log stays
-- append-only except for one rewrite, the bulky body of an old tool result replaced by a
-- stub, allowed only in a transaction that set lazyboy.rewrite (SET LOCAL) and only for a
-- tool_result's data. DELETE and TRUNCATE stay refused.
CREATE OR REPLACE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
        AND current_setting('lazyboy.rewrite', true) = 'on'
        AND OLD.kind = 'tool_result'
        AND NEW.seq = OLD.seq
        AND NEW.kind = OLD.kind
        AND NEW.thread_id = OLD.thread_id
        AND NEW.agent_id = OLD.agent_id
        AND NEW.task_id IS NOT DISTINCT FROM OLD.task_id
        AND NEW.at_ms = OLD.at_ms
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'events are append-only';
END;
$$;
