-- 0014_goal_head, PostgreSQL's twin of migrations/0014_goal_head.sql: the
-- commit of the goal's last work item that reached `done`, the head every
-- node starts a clone-mode goal's next item from (docs/scaling.md).  The
-- column comes after goals.rowid (tests/pg/schema_diff.py sets rowid aside).
ALTER TABLE goals ADD COLUMN head_commit TEXT;
