-- An agent's conversation across its tasks: what the person and the agent said to each other
-- (objectives, messages, final words), plus its summaries and clears. A partial index keeps
-- reading it cheap without costing other appends anything.
CREATE INDEX events_dialogue ON events (agent_id, seq)
    WHERE kind IN ('user_message', 'agent_message', 'task_created', 'task_finished',
                   'summary', 'conversation_cleared');

-- Full-text search over the same messages (`read_conversation`). Contentless: the text stays
-- in `events`; the index maps words to seqs.
CREATE VIRTUAL TABLE conversation_fts USING fts5(text, content='');

CREATE TRIGGER events_conversation_fts AFTER INSERT ON events
WHEN new.kind IN ('user_message', 'agent_message', 'task_created', 'task_finished')
BEGIN
    INSERT INTO conversation_fts (rowid, text) VALUES (new.seq, COALESCE(
        json_extract(new.data, '$.text'), json_extract(new.data, '$.objective'),
        json_extract(new.data, '$.message'), ''));
END;

INSERT INTO conversation_fts (rowid, text)
    SELECT seq, COALESCE(json_extract(data, '$.text'), json_extract(data, '$.objective'),
                         json_extract(data, '$.message'), '')
    FROM events
    WHERE kind IN ('user_message', 'agent_message', 'task_created', 'task_finished');
