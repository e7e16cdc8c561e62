-- 0021_item_position, PostgreSQL's twin of migrations/0021_item_position.sql:
-- an item's place in its plan (1, 2, ...), so that items of a goal running
-- at the same time land in the plan's order; NULL for items planned before.
ALTER TABLE work_items ADD COLUMN position BIGINT;
