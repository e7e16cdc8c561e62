-- 0020_gate_tree_runs, PostgreSQL's twin of migrations/0020_gate_tree_runs.sql:
-- the first run of a gate on a tree, per goal (env: a sha256 of the gate
-- as configured and the sandbox it ran in); never recorded over, so a
-- pass reused later is the tree's first run.  reusable: passed at once,
-- not timed out, its test cases complete.
CREATE TABLE gate_tree_runs (
    goal_id     TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    gate        TEXT NOT NULL,
    command     TEXT NOT NULL,
    env         TEXT NOT NULL,
    tree_id     TEXT NOT NULL,
    run_id      TEXT,
    passed      BIGINT NOT NULL,
    reusable    BIGINT NOT NULL,
    exit_code   BIGINT,
    format      TEXT,
    cases       TEXT NOT NULL DEFAULT '[]' CHECK (goald_json_valid(cases)),
    output_hash TEXT,
    output_tail TEXT,
    duration_ms BIGINT,
    created_at  BIGINT NOT NULL,
    rowid       BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (goal_id, gate, command, env, tree_id)
);
