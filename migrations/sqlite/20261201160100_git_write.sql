-- Issue 21: per agent, whether its workspace-write commands may change the repositories'
-- git directories (.git: config, hooks, the index...). Off by default: the sandbox keeps
-- them read-only, so nothing the agent writes there runs at the person's next git command.
ALTER TABLE agents ADD COLUMN git_write BOOLEAN NOT NULL DEFAULT 0;
