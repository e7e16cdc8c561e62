-- 0013_nodes: PostgreSQL's twin of migrations/0013_nodes.sql (each daemon
-- its own heartbeat row by node id; each run the node that claimed it).
-- A column added to a table with a rowid comes after it: the schema check
-- (tests/pg/schema_diff.py) compares the columns with rowid aside.
DROP TABLE daemon_heartbeat;
CREATE TABLE daemon_heartbeat (
    node_id    TEXT PRIMARY KEY,
    host       TEXT NOT NULL DEFAULT '',
    pid        BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    last_tick  BIGINT NOT NULL,
    lanes      TEXT NOT NULL DEFAULT '{}' CHECK (goald_json_valid(lanes)),
    rowid      BIGINT GENERATED ALWAYS AS IDENTITY
);
ALTER TABLE runs ADD COLUMN node_id TEXT;
CREATE INDEX runs_node ON runs(node_id, status);
