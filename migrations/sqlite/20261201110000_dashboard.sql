-- The dashboard's projections (`store/projections/`) read the newest few rows of a kind;
-- these partial indexes make each such read a seek, however long the log. They cover few
-- rows (messages, plans, questions are a small part of the log), so appends stay cheap.

-- The last thing each agent said (the status board).
CREATE INDEX events_agent_messages ON events (agent_id, seq) WHERE kind = 'agent_message';
-- The current plan of a task (the board's plan step, the conversation's checklist).
CREATE INDEX events_task_plans ON events (task_id, seq) WHERE kind = 'plan_updated';
-- The question a waiting task asks.
CREATE INDEX events_task_questions ON events (task_id, seq) WHERE kind = 'question';
-- An agent's conversation, newest first, without the streaming deltas, heartbeats and
-- bookkeeping that make up most of the log. The query repeats this list verbatim (SQLite
-- uses a partial index only when the query's WHERE contains the index's term):
-- `store::projections::conversation::KINDS` must stay identical (a unit test checks).
CREATE INDEX events_conversation ON events (agent_id, seq) WHERE kind IN ('user_message', 'agent_message', 'task_created', 'tool_call', 'tool_result', 'plan_updated', 'question', 'task_finished', 'runtime_note', 'command_started', 'command_ended', 'schedule_added', 'schedule_removed', 'schedule_paused', 'schedule_resumed', 'schedule_fired', 'schedule_skipped');
