-- As SQLite's 20261201100000_agent_mcp: the MCP servers an agent's tasks get (a JSON list of
-- `[mcp.servers.NAME]` names).
ALTER TABLE agents ADD COLUMN mcp TEXT NOT NULL DEFAULT '[]';
