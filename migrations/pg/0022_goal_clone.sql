-- 0022_goal_clone, PostgreSQL's twin of migrations/0022_goal_clone.sql:
-- whether a goal is in clone mode, decided once at submit; NULL for goals
-- submitted before (they ask the repository).
ALTER TABLE goals ADD COLUMN clone BIGINT;
