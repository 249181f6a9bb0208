-- What each task's model requests cost, summed in the row in the same transaction as the
-- `model_usage` event that records each request (the log stays the source of truth).
ALTER TABLE tasks ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
-- 1 once any request's figures were counted by the daemon (the provider reported none).
ALTER TABLE tasks ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
-- Millionths of a US dollar, where the config priced the model; NULL when none was priced.
ALTER TABLE tasks ADD COLUMN cost_microusd INTEGER;
