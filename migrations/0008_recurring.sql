-- 0008_recurring: recurring goals.
-- How a completed goal ended when it is not the usual "the work was done
-- and published": 'nothing_to_do' when its elaboration found nothing to
-- do (no branch, no work items), with the model's reason.
ALTER TABLE goals ADD COLUMN outcome TEXT CHECK (outcome IS NULL OR outcome IN ('nothing_to_do'));
ALTER TABLE goals ADD COLUMN outcome_reason TEXT;
