-- 0016_item_criteria, PostgreSQL's twin of migrations/0016_item_criteria.sql:
-- the success criteria a work item serves (a JSON array of 0-based
-- indexes into the goal's success_criteria; NULL: every criterion).
ALTER TABLE work_items ADD COLUMN criteria TEXT;
