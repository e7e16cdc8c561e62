-- 0021_item_position: an item's place in its plan (1, 2, ...), so that
-- items of a goal running at the same time land on the goal branch in the
-- plan's order.  NULL for items planned before: they keep no order.
ALTER TABLE work_items ADD COLUMN position INTEGER;
