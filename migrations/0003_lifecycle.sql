-- 0003_lifecycle: plan-lane retries on goals, and the model chain position of a run.
ALTER TABLE goals ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE goals ADD COLUMN next_attempt_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN model_index INTEGER NOT NULL DEFAULT 0;
CREATE INDEX goals_claim ON goals(status, next_attempt_at);
