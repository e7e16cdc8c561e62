-- 0002_llm: the script provider's read positions.
-- The work of one goal spans many `goald job` processes; a scripted model
-- must go on where the previous process stopped.  One row per script file
-- (its real path and the SHA-256 of its contents: an edited script starts
-- over) and cursor: a stage name for lines keyed by stage, '*' for the
-- others.  next_line is the 0-based index of the first line not yet served.
CREATE TABLE llm_script_cursors (
    path       TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    stage      TEXT NOT NULL,
    next_line  INTEGER NOT NULL DEFAULT 0 CHECK (next_line >= 0),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (path, sha256, stage)
);
