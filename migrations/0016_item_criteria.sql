-- 0016_item_criteria: the success criteria a work item serves, as the
-- plan assigned them: a JSON array of 0-based indexes into the goal's
-- success_criteria.  NULL (plans without assignments): every criterion.
ALTER TABLE work_items ADD COLUMN criteria TEXT;
