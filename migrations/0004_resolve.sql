-- 0004_resolve: a human's resolution restarts an item's recovery; runs
-- before it do not count towards its tiers.
ALTER TABLE work_items ADD COLUMN recovery_epoch INTEGER NOT NULL DEFAULT 0;
