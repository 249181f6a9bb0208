-- As SQLite's 20261201160100_git_write (issue 21): per agent, whether its workspace-write
-- commands may change the repositories' git directories. Off by default.
ALTER TABLE agents ADD COLUMN git_write BOOLEAN NOT NULL DEFAULT FALSE;
