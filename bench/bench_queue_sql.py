#!/usr/bin/env python3
"""bench_queue_sql.py SNAPSHOT [K ...] - the daemon's per-tick and per-claim
queries as the queue grows, before and after migrations/0018.

SNAPSHOT: a SQLite database taken during a bench_queue.sh run (its
BENCH_SNAPSHOT, taken when half the goals have completed: goals queued,
active with items ready, completed), of either schema (0018 is undone for
"before" and done for "after").
For each K (default 1 10): a copy holding the snapshot's goals, items,
dependencies and runs K times (ids suffixed), without and with 0018's
indexes; each query runs 40 times and its CPU time (time.process_time) is
averaged: the picks stop at their first row as pick_goal() does, the
others read every row.  The query texts are copies of store/run.c,
store/trigger.c and store/escalation.c at the two versions.
"""
import os
import shutil
import sqlite3
import sys
import tempfile
import time

NR = " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.goal_id = g.id AND r.status = 'running')"
OLD = {
    "plan pick": "SELECT id, CASE status WHEN 'queued' THEN 'elaborate' ELSE 'plan' END, attempts"
    " FROM goals g WHERE is_template = 0 AND next_attempt_at <= ?1 AND (status = 'queued' OR"
    " (status = 'active' AND elaboration IS NOT NULL AND NOT EXISTS (SELECT 1 FROM work_items w"
    " WHERE w.goal_id = g.id)))" + NR + " ORDER BY priority DESC, created_at, id",
    "publish pick": "SELECT id, 'publish', attempts FROM goals g WHERE status = 'active' AND"
    " next_attempt_at <= ?1 AND (partial = 1 OR (EXISTS (SELECT 1 FROM work_items w WHERE"
    " w.goal_id = g.id) AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id AND"
    " w.status NOT IN ('done', 'skipped'))))" + NR + " ORDER BY priority DESC, created_at, id",
    "execute candidates": "SELECT w.id, w.goal_id, w.priority, w.created_at, w.updated_at,"
    " (SELECT count(*) FROM work_item_deps d WHERE d.depends_on_id = w.id) FROM work_items w"
    " JOIN goals g ON g.id = w.goal_id WHERE w.status = 'ready' AND g.status = 'active' AND"
    " w.next_attempt_at <= ?1 AND NOT EXISTS (SELECT 1 FROM work_items o WHERE o.goal_id ="
    " w.goal_id AND o.status IN ('in_progress', 'verify'))",
    "templates (tick)": "SELECT id, schedule FROM goals g WHERE is_template = 1 AND status <>"
    " 'cancelled' AND schedule IS NOT NULL AND NOT EXISTS (SELECT 1 FROM triggers t WHERE"
    " t.goal_id = g.id)",
    "deadlines (tick)": "SELECT id FROM goals g WHERE is_template = 0 AND deadline_at IS NOT NULL"
    " AND deadline_at < ?1 AND status IN ('queued','active','blocked') AND NOT EXISTS (SELECT 1"
    " FROM escalations e WHERE e.goal_id = g.id AND e.type = 'deadline')",
}
NEW = dict(OLD)
NEW["plan pick"] = (
    "SELECT id, 'elaborate' AS kind, attempts, priority, created_at FROM goals g WHERE status ="
    " 'queued' AND is_template = 0 AND +next_attempt_at <= ?1" + NR + " UNION ALL SELECT id,"
    " 'plan', attempts, priority, created_at FROM goals g WHERE status = 'active' AND"
    " is_template = 0 AND +next_attempt_at <= ?1 AND elaboration IS NOT NULL AND NOT EXISTS"
    " (SELECT 1 FROM work_items w WHERE w.goal_id = g.id)" + NR +
    " ORDER BY priority DESC, created_at, id")
NEW["publish pick"] = OLD["publish pick"].replace("AND next_attempt_at", "AND +next_attempt_at")
NEW["deadlines (tick)"] = OLD["deadlines (tick)"].replace("status IN", "status || '' IN")
COPIED = ("id", "goal_id", "item_id", "depends_on_id")


def scale(src, dst, k):
    shutil.copy(src, dst)
    c = sqlite3.connect(dst)
    for i in range(2, k + 1):
        for t in ("goals", "work_items", "work_item_deps", "runs"):
            cols = [r[1] for r in c.execute("SELECT * FROM pragma_table_info(?)", (t,))]
            sel = ", ".join(x + " || '-%d'" % i if x in COPIED else x for x in cols)
            key = "item_id" if t == "work_item_deps" else "id"
            c.execute("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s NOT LIKE '%%-%%-%%-%%-%%-%%'"
                      % (t, ", ".join(cols), sel, t, key))
    c.commit()
    c.close()


def cpu_ms(db, q, now, first_only):
    c = sqlite3.connect(db)
    n = 40
    t0 = time.process_time()
    for _ in range(n):
        cur = c.execute(q, (now,)) if "?1" in q else c.execute(q)
        cur.fetchone() if first_only else cur.fetchall()
        cur.close()
    c.close()
    return (time.process_time() - t0) / n * 1000


def main():
    snap = sys.argv[1]
    ks = [int(k) for k in sys.argv[2:]] or [1, 10]
    mig = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "migrations",
                       "0018_queue_indexes.sql")
    now = int(time.time() * 1000)
    tmp = tempfile.mkdtemp(prefix="goald-bench-queue-sql.")
    try:
        rows = {}
        for k in ks:
            old, new = os.path.join(tmp, "old%d.db" % k), os.path.join(tmp, "new%d.db" % k)
            scale(snap, old, k)
            c = sqlite3.connect(old)  # a snapshot of either schema: 0018 undone
            c.executescript("DROP INDEX IF EXISTS goals_pick; DROP INDEX IF EXISTS goals_template;"
                            " DROP INDEX IF EXISTS goals_deadline; CREATE INDEX IF NOT EXISTS"
                            " goals_status ON goals(status, priority DESC, created_at);")
            c.close()
            shutil.copy(old, new)
            c = sqlite3.connect(new)
            c.executescript(open(mig).read().replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS")
                            .replace("DROP INDEX", "DROP INDEX IF EXISTS"))
            c.close()
            c = sqlite3.connect(old)
            counts = dict(c.execute("SELECT status, count(*) FROM goals GROUP BY status"))
            c.close()
            print("K=%d: goals %s" % (k, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
            for name in OLD:
                first = "pick" in name
                rows.setdefault(name, []).append(
                    (k, cpu_ms(old, OLD[name], now, first), cpu_ms(new, NEW[name], now, first)))
        for name, r in rows.items():
            print("%-19s" % name, "  ".join("K=%d %.3f -> %.3f ms" % x for x in r))
    finally:
        shutil.rmtree(tmp)


main()
