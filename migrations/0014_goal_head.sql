-- 0014_goal_head: the commit of the goal's last work item that reached
-- `done` (docs/scaling.md, "Code state: repositories every node can
-- reach").  For a goal in clone mode (its repo a URL or a bare repository)
-- it is the goal's head: every node starts its next item from this commit,
-- never from what the remote's refs/goald/<goal-id> holds.  NULL until an
-- item with a commit is done.  (0013 is another change's number.)
ALTER TABLE goals ADD COLUMN head_commit TEXT;
