#!/usr/bin/env python3
# Interleaved A/B start-up timing of two goald binaries (before and
# after linking libcurl, libgit2 and libcrypto normally).  Alternating runs
# share whatever load the machine has, so the ratio is steadier than two
# separate bench_cli runs.  Usage: bench/start_ab.py GOALD_A GOALD_B [ROUNDS]
import os, sys, time, statistics, subprocess, tempfile, shutil
before, after = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 101
work = tempfile.mkdtemp(prefix="hb-ab-")
repo = os.path.join(work, "repo")
subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
subprocess.run(["git", "-C", repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
goal = os.path.join(work, "g.json")
open(goal, "w").write('{"title": "x", "repo": "%s"}\n' % repo)
def run(argv):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    _, st, ru = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0, argv
    return (time.perf_counter_ns() - t0) / 1e6, ru.ru_maxrss
res = {}
for r in range(rounds):
    for tag, b in (("before", before), ("after", after)):
        db = os.path.join(work, tag + ".db")
        for what, argv in (("--help", [b, "--help"]), ("submit+repo", [b, "--db", db, "submit", goal]),
                           ("goals", [b, "--db", db, "goals"])):
            ms, rss = run(argv)
            res.setdefault((what, tag), []).append((ms, rss))
for what in ("--help", "submit+repo", "goals"):
    m = {t: statistics.median(x[0] for x in res[(what, t)]) for t in ("before", "after")}
    rss = {t: max(x[1] for x in res[(what, t)]) / 1024 for t in ("before", "after")}
    print(f"{what:12s} before {m['before']:.2f} ms  after {m['after']:.2f} ms  ratio {m['after']/m['before']:.2f}")
shutil.rmtree(work)
