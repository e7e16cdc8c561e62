-- 0011_learned_window: an endpoint's "max_tokens too large" error states
-- its context window; that window is what goald keeps (later requests'
-- output budget and compaction follow it).  The max_tokens that fitted one
-- request was kept before, and every later request was capped by it: a
-- near-full prompt could leave every later answer a few tokens long.
ALTER TABLE llm_endpoint_quirks ADD COLUMN context_window INTEGER NOT NULL DEFAULT 0;
UPDATE llm_endpoint_quirks SET max_tokens = 0;
