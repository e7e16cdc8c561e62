#!/usr/bin/env python3
"""bench_queue_picks.py SNAPSHOT [K ...] - the work and plan lanes' picks
before and after migrations/0019 (goals.items, items_open and
work_items.dependents kept by triggers, read through partial indexes).

SNAPSHOT: a SQLite database of the 0019 schema taken during a
bench_queue.sh run (BENCH_SNAPSHOT, or `.backup` by hand).  For each K
(default 1): a copy holding the snapshot's goals, items, dependencies and
runs K times (ids suffixed; the triggers count the copies).  Each pick
runs 40 times and its CPU time (time.process_time) is averaged:
- before: the rules of store/run.c at 0018 (the publish and plan picks
  probe each active goal's items; the execute candidates are every ready
  item with a correlated count of its dependents, all scored: the time
  shown is the statement's alone, select.c scored the rows in C);
- after: the rules of store/run.c now, and the execute pick as
  lifecycle/select.c walks it (the groups of one priority and one number
  of dependents, a seek each; in each the longest waiting first, up to
  the first that scores below the group's first).
Both picks of each kind are checked to take the same row.
"""
import os
import shutil
import sqlite3
import sys
import tempfile
import time

NR = " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.goal_id = g.id AND r.status = 'running')"
EXEC_WHERE = (" JOIN goals g ON g.id = w.goal_id WHERE w.status = 'ready' AND g.status = 'active'"
              " AND w.next_attempt_at <= ?1 AND NOT EXISTS (SELECT 1 FROM work_items o"
              " WHERE o.goal_id = w.goal_id AND o.status IN ('in_progress', 'verify'))")
BEFORE = {
    "publish pick": "SELECT id FROM goals g WHERE status = 'active' AND +next_attempt_at <= ?1"
    " AND (partial = 1 OR (EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id) AND NOT"
    " EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id AND w.status NOT IN ('done',"
    " 'skipped'))))" + NR + " ORDER BY priority DESC, created_at, id",
    "plan pick": "SELECT id, 'elaborate' AS kind, priority, created_at FROM goals g WHERE status ="
    " 'queued' AND is_template = 0 AND +next_attempt_at <= ?1" + NR + " UNION ALL SELECT id,"
    " 'plan', priority, created_at FROM goals g WHERE status = 'active' AND is_template = 0 AND"
    " +next_attempt_at <= ?1 AND elaboration IS NOT NULL AND NOT EXISTS (SELECT 1 FROM"
    " work_items w WHERE w.goal_id = g.id)" + NR + " ORDER BY priority DESC, created_at, id",
    "execute candidates": "SELECT w.id, w.goal_id, w.priority, w.created_at, w.updated_at,"
    " (SELECT count(*) FROM work_item_deps d WHERE d.depends_on_id = w.id) FROM work_items w"
    + EXEC_WHERE,
}
AFTER = {
    "publish pick": "SELECT id FROM goals g INDEXED BY goals_to_publish WHERE status = 'active'"
    " AND (partial = 1 OR (items > 0 AND items_open = 0)) AND +next_attempt_at <= ?1" + NR +
    " ORDER BY priority DESC, created_at, id",
    "plan pick": "SELECT id, 'elaborate' AS kind, priority, created_at FROM goals g WHERE status ="
    " 'queued' AND is_template = 0 AND +next_attempt_at <= ?1" + NR + " UNION ALL SELECT id,"
    " 'plan', priority, created_at FROM goals g INDEXED BY goals_to_plan WHERE status = 'active'"
    " AND items = 0 AND is_template = 0 AND +next_attempt_at <= ?1 AND elaboration IS NOT NULL"
    + NR + " ORDER BY priority DESC, created_at, id",
}
GROUP = ("SELECT priority, dependents FROM work_items INDEXED BY work_items_ready WHERE status ="
         " 'ready'%s ORDER BY priority DESC, dependents DESC LIMIT 1")
WALK = ("SELECT w.id, w.goal_id, w.priority, w.created_at, w.updated_at, w.dependents FROM"
        " work_items w INDEXED BY work_items_ready" + EXEC_WHERE +
        " AND w.priority = ?2 AND w.dependents = ?3 ORDER BY w.updated_at, w.created_at, w.id")
FULL_MS = 3600 * 1000.0  # select.freshness_full_s


def score(prio, dependents, updated_at, now):
    age = float(now - updated_at)
    fresh = 0 if age <= 0 else 100 if age >= FULL_MS else 100.0 * age / FULL_MS
    dep = 100 if dependents * 20.0 > 100 else dependents * 20.0
    return prio * 0.6 + fresh * 0.2 + dep * 0.2


def key(row, now):  # the order of select.c's better(): the smallest is the best
    return (-score(row[2], row[5], row[4], now), row[3], row[0])


def execute_before(c, now):
    rows = c.execute(BEFORE["execute candidates"], (now,)).fetchall()
    return min(rows, key=lambda r: key(r, now))[0] if rows else None


def execute_before_sql(c, now):  # the statement alone (select.c scored the rows in C)
    c.execute(BEFORE["execute candidates"], (now,)).fetchall()


def execute_after(c, now):
    best, g = None, c.execute(GROUP % "").fetchone()
    while g:
        top = None
        for r in c.execute(WALK, (now, g[0], g[1])):
            s = score(r[2], r[5], r[4], now)
            if top is None:
                top = s
            elif s < top:
                break
            if best is None or key(r, now) < key(best, now):
                best = r
        g = (c.execute(GROUP % " AND priority = ?1 AND dependents < ?2", g).fetchone()
             or c.execute(GROUP % " AND priority < ?1", (g[0],)).fetchone())
    return best[0] if best else None


def first(c, q, now):
    r = c.execute(q, (now,)).fetchone()
    return r[0] if r else None


def cpu_ms(db, fn, now):
    c = sqlite3.connect(db)
    n = 40
    out = fn(c, now)
    t0 = time.process_time()
    for _ in range(n):
        fn(c, now)
    c.close()
    return (time.process_time() - t0) / n * 1000, out


def scale(src, dst, k):
    shutil.copy(src, dst)
    c = sqlite3.connect(dst)
    for i in range(2, k + 1):
        for t in ("goals", "work_items", "work_item_deps", "runs"):
            cols = [r[1] for r in c.execute("SELECT * FROM pragma_table_info(?)", (t,))]
            sel = ", ".join(x + " || '-%d'" % i if x in ("id", "goal_id", "item_id",
                                                         "depends_on_id") else x for x in cols)
            k_ = "item_id" if t == "work_item_deps" else "id"
            c.execute("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s NOT LIKE '%%-%%-%%-%%-%%-%%'"
                      % (t, ", ".join(cols), sel, t, k_))
    c.commit()
    c.close()


def main():
    snap = sys.argv[1]
    ks = [int(k) for k in sys.argv[2:]] or [1]
    now = int(time.time() * 1000)
    tmp = tempfile.mkdtemp(prefix="goald-bench-queue-picks.")
    try:
        for k in ks:
            db = os.path.join(tmp, "k%d.db" % k)
            scale(snap, db, k)
            c = sqlite3.connect(db)
            goals = dict(c.execute("SELECT status, count(*) FROM goals GROUP BY status"))
            ready = c.execute("SELECT count(*) FROM work_items WHERE status = 'ready'").fetchone()
            c.close()
            print("K=%d: goals %s; ready items %d" % (
                k, ", ".join("%s %d" % kv for kv in sorted(goals.items())), ready[0]))
            for name, before, after in (
                    ("publish pick", lambda c, n: first(c, BEFORE["publish pick"], n),
                     lambda c, n: first(c, AFTER["publish pick"], n)),
                    ("plan pick", lambda c, n: first(c, BEFORE["plan pick"], n),
                     lambda c, n: first(c, AFTER["plan pick"], n)),
                    ("execute pick", execute_before, execute_after)):
                (b, bo), (a, ao) = cpu_ms(db, before, now), cpu_ms(db, after, now)
                same = "same pick" if bo == ao else "DIFFERENT PICKS: %s / %s" % (bo, ao)
                if before is execute_before:  # the rows' scoring in Python left out
                    b = cpu_ms(db, execute_before_sql, now)[0]
                print("  %-13s %8.3f -> %7.3f ms CPU  (%s)" % (name, b, a, same))
    finally:
        shutil.rmtree(tmp)


main()
