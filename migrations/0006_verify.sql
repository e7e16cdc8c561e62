-- 0006_verify: truthful verification.
-- A gate's result on an item's baseline commit, run once per gate command
-- and baseline (retries and later items on the same head reuse it).  cases
-- holds the parsed test cases as [[id, "pass"|"fail"|"skip", file|null], ...].
CREATE TABLE gate_baselines (
    goal_id     TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    gate        TEXT NOT NULL,
    command     TEXT NOT NULL,
    baseline    TEXT NOT NULL,   -- commit sha
    passed      INTEGER NOT NULL,
    exit_code   INTEGER,
    format      TEXT,            -- test case format; NULL: not parsed
    cases       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(cases)),
    output_hash TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (goal_id, gate, command, baseline)
);
