-- Boundaries (issue 13): per agent, the effects whose calls wait for the person's approval
-- (a JSON list of effect names: "command", "workspace_write", "network", "box"), the
-- exec_command rules that need none (a JSON list: "git status", "cargo test*"), and where
-- its host commands may write. sandbox NULL: the default (off for the `default` agent,
-- workspace-write for named ones).
ALTER TABLE agents ADD COLUMN approve TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN allow TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN sandbox TEXT;
