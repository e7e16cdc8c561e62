-- 0013_nodes: several daemons (nodes) sharing one queue (docs/scaling.md).
-- Each daemon keeps its own heartbeat row, keyed by its node id (node.id,
-- default HOST:STATE_DIR), with the host it runs on; each run records the
-- node that claimed it, so that a node recovers only its own runs by
-- their process ids, and the runs of another node only when that node
-- stopped beating.  The old one-row heartbeat is a liveness record, not
-- history: a running daemon writes its row again at its next tick.
DROP TABLE daemon_heartbeat;
CREATE TABLE daemon_heartbeat (
    node_id    TEXT PRIMARY KEY,
    host       TEXT NOT NULL DEFAULT '',
    pid        INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    last_tick  INTEGER NOT NULL,
    lanes      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(lanes))
);
ALTER TABLE runs ADD COLUMN node_id TEXT;
CREATE INDEX runs_node ON runs(node_id, status);
