-- 0007_control: configuration errors stop work; escalations closed by the
-- system.
-- A breaker opened by a configuration or credential error (classes config
-- and auth) does not cool down: it stays open until the LLM configuration
-- changes (config_fp, the fingerprint of the configuration it failed with,
-- differs from the daemon's) or a human resolves its escalation.  reason is
-- the error that opened it, for `status` and `daemon --once`.
ALTER TABLE breakers ADD COLUMN config_fp TEXT;
ALTER TABLE breakers ADD COLUMN reason TEXT;
