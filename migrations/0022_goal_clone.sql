-- 0022_goal_clone: whether a goal is in clone mode (its repo a URL or a
-- bare repository: docs/scaling.md), decided once at submit, so that a
-- job need not open the repository to know where the goal's code is.
-- NULL for goals submitted before: they ask the repository, as before.
ALTER TABLE goals ADD COLUMN clone INTEGER;
