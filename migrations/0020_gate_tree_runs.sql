-- 0020_gate_tree_runs: the first run of a gate on a tree, per goal.
-- A gate run is decided by the tree it ran on, the gate as configured
-- (name, command, type, report, timeout) and the sandbox it ran in
-- (env: a sha256 of all that); the first run of that on a tree is kept,
-- and a later run on the same tree is never recorded over it, so that a
-- pass reused later is the tree's first run, never a re-run that
-- happened to pass.  reusable: it passed at once, did not time out, and
-- its test cases are complete (cases as in gate_baselines).  output_tail:
-- what the run printed (its tail, redacted), shown again with a reuse.
CREATE TABLE gate_tree_runs (
    goal_id     TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    gate        TEXT NOT NULL,
    command     TEXT NOT NULL,
    env         TEXT NOT NULL,
    tree_id     TEXT NOT NULL,
    run_id      TEXT,
    passed      INTEGER NOT NULL,
    reusable    INTEGER NOT NULL,
    exit_code   INTEGER,
    format      TEXT,
    cases       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(cases)),
    output_hash TEXT,
    output_tail TEXT,
    duration_ms INTEGER,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (goal_id, gate, command, env, tree_id)
);
