-- As SQLite's 20261201110000_dashboard (and the rename in 20261201120100_conversation): the
-- dashboard's projections (`store/projections/`) read the newest few rows of a kind; these
-- partial indexes make each such read a seek, however long the log. PostgreSQL uses a partial
-- index when the query's WHERE implies the index's, so the queries repeat these terms as on
-- SQLite (a test checks each backend's plans).

-- The conversation's index of the schema (what read_conversation and the prompt read) keeps
-- its rows under the name SQLite gives it; `events_conversation` is the dashboard's below.
ALTER INDEX events_conversation RENAME TO events_dialogue;

-- The last thing each agent said (the status board).
CREATE INDEX events_agent_messages ON events (agent_id, seq) WHERE kind = 'agent_message';
-- The current plan of a task (the board's plan step, the conversation's checklist).
CREATE INDEX events_task_plans ON events (task_id, seq) WHERE kind = 'plan_updated';
-- The question a waiting task asks.
CREATE INDEX events_task_questions ON events (task_id, seq) WHERE kind = 'question';
-- An agent's conversation, newest first, without the streaming deltas, heartbeats and
-- bookkeeping that make up most of the log: `store::projections::conversation::KINDS`.
CREATE INDEX events_conversation ON events (agent_id, seq) WHERE kind IN ('user_message', 'agent_message', 'task_created', 'tool_call', 'tool_result', 'plan_updated', 'question', 'task_finished', 'runtime_note', 'command_started', 'command_ended', 'schedule_added', 'schedule_removed', 'schedule_paused', 'schedule_resumed', 'schedule_fired', 'schedule_skipped');
