-- The MCP servers an agent's tasks get (a JSON list of `[mcp.servers.NAME]` names).
ALTER TABLE agents ADD COLUMN mcp TEXT NOT NULL DEFAULT '[]';
