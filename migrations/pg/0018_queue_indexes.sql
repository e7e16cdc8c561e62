-- 0018_queue_indexes, PostgreSQL's twin of migrations/0018_queue_indexes.sql:
-- what the daemon looks at every tick and at every claim costs the same
-- with 100 goals queued as with 10,000 (bench/bench_queue.sh).
-- The plan and publish picks walk the open goals in claim order and stop
-- at the first one they may take, rather than sort them all.
CREATE INDEX goals_pick ON goals(status, priority DESC, created_at, id);
DROP INDEX goals_status; -- goals_pick's first three columns
-- The cron lane's look for templates without a trigger, every tick.
CREATE INDEX goals_template ON goals(id) WHERE is_template = 1;
-- The deadline check, every tick: only goals that have a deadline.
CREATE INDEX goals_deadline ON goals(deadline_at) WHERE deadline_at IS NOT NULL;
