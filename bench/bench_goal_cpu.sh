#!/usr/bin/env bash
# bench_goal_cpu.sh GOALD_BINARY [GOALS] [RUNS] [BACKEND ...] - the CPU a
# goal of three items costs, on SQLite in local mode and on PostgreSQL in
# clone mode.
#
# Per run: a fresh database, GOALS goals (default 30) of three chained
# items submitted, then one `goald daemon` (the default tick and lanes)
# until every goal has ended; the script provider answers at once (the
# stage-keyed lines of bench_queue.sh: elaborate, plan, then execute -- a
# bash tool call that appends to a file, then complete -- and review per
# item), the gate `true`.
#   sqlite: each goal on a working repository of its own (local mode).
#   pg:     each goal on a bare repository of its own (clone mode: every
#           item fetched, committed and pushed), a server of its own
#           (tests/pg/pg-server: Unix socket, fsync off).
# CPU per goal: the daemon's utime + stime and its reaped children's (the
# job processes and what they ran: sandboxes, shells) from /proc/PID/stat
# just before it is stopped; on PostgreSQL also the server's (the
# postmaster and every backend, reaped or live, delta over the run; the
# bench's own poll is one connection kept open).  RUNS times each
# (default 3), medians.  The load average is printed: a busy machine
# inflates CPU too, less than wall time.
#   BENCH_CGROUP=DIR (a cgroup v1 cpuacct folder of the bench's own, e.g.
#     /sys/fs/cgroup/cpuacct/goald-bench): the daemon runs in DIR/goald
#     and the server in DIR/pg, and their cpuacct.usage is printed too:
#     scheduler time of every descendant, reaped or not (the process tree
#     misses the bwrap process that outlives its parent and is reaped by
#     init), the figure to read where the machine allows it.
#   BENCH_BEFORE=GOALD_OLD: that binary runs before GOALD_BINARY in every
#     round (one run each, alternating, so that both see the same load),
#     and both medians are printed.
#   BENCH_PG_STATEMENTS=1: the server loads pg_stat_statements and each
#     run prints the statements per goal and the most frequent ones
#     (top-level: what goald sends; BENCH_PG_TOP of them, default 25).
#   BENCH_PG_PERF=FILE: perf record -g of the server's processes (the
#     postmaster and every backend it forks) over the runs, into FILE.
# Each PostgreSQL run also prints the connections (sessions) and
# transactions per goal (pg_stat_database, deltas).
# Results are recorded in bench/RESULTS.md ("A goal's CPU on both backends").
set -euo pipefail
G=$(realpath "${1:?usage: bench_goal_cpu.sh GOALD_BINARY [GOALS] [RUNS] [sqlite|pg ...]}")
AFTER=$G
BEFORE=${BENCH_BEFORE:+$(realpath "$BENCH_BEFORE")}
N=${2:-30}
RUNS=${3:-3}
shift $(($# < 3 ? $# : 3))
[ $# -gt 0 ] || set -- sqlite pg
SRC=$(cd "$(dirname "$0")/.." && pwd)
PGS="$SRC/tests/pg/pg-server"
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-cpu.XXXXXX")
PGD=
cleanup() {
    [ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
    [ -n "${POLL_PID:-}" ] && kill "$POLL_PID" 2>/dev/null
    [ -n "${PERF_PID:-}" ] && kill -INT "$PERF_PID" 2>/dev/null
    wait 2>/dev/null
    [ -n "$PGD" ] && "$PGS" stop "$PGD" >/dev/null 2>&1
    rm -rf "$W" ${PGD:+"$PGD"}
}
trap cleanup EXIT
export HOME="$W/home" XDG_STATE_HOME="$W/state" XDG_CONFIG_HOME="$W/config"
export GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$W/s.jsonl"
unset GOALD_CONFIG GOALD_LLM_BASE_URL GOALD_LLM_MODEL GOALD_LLM_API_KEY GOALD_LLM_MODELS GOALD_DB
mkdir -p "$HOME"
HZ=$(getconf CLK_TCK)
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

{
    for ((i = 0; i < N + 2; i++)); do
        echo '{"stage":"elaborate","content":{"components":["work.log"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["read","edit","bash"],"verification":[]}}'
        echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"item 1","type":"code","effort":"S","depends_on":[]},{"key":"wi-2","title":"item 2","type":"code","effort":"S","depends_on":["wi-1"]},{"key":"wi-3","title":"item 3","type":"code","effort":"S","depends_on":["wi-2"]}]}}'
    done
    for ((i = 0; i < 3 * N + 6; i++)); do
        echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"date +%s%N >> work.log"}},{"name":"complete","arguments":{"summary":"appended a line to work.log"}}]}'
        echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
    done
} >"$GOALD_LLM_SCRIPT"

mkdir -p "$W/seed"
git -C "$W/seed" init -q -b main
echo "work log" >"$W/seed/work.log"
git -C "$W/seed" add -A
git -C "$W/seed" -c user.email=b@example.com -c user.name=b commit -q -m init
git clone -q --bare "$W/seed" "$W/seed.git"

# the CPU ticks of a process tree's root: its own and its reaped children's
tree_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
# the PostgreSQL server's ticks: the postmaster (with its reaped backends)
# and its live children
pg_ticks() {
    local pm t c
    pm=$(head -n1 "$PGD/data/postmaster.pid")
    t=$(tree_ticks "$pm")
    for c in $(pgrep -P "$pm"); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}

# pg_counts: "sessions transactions" of the database so far
pg_counts() {
    psql -qXAt "$SUPER" -F ' ' -c "SELECT sessions, xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'goald'"
}

# open_goals: how many goals are queued or active (through the poll
# connection on PostgreSQL: a psql per poll would be a backend each)
open_goals() {
    if [ "$BACKEND" = pg ]; then
        echo "SELECT count(*) FROM goals WHERE status IN ('queued', 'active');" >&"${POLL[1]}"
        local v
        read -r v <&"${POLL[0]}"
        echo "$v"
    else
        sqlite3 -cmd ".timeout 5000" "$GOALD_DB" "SELECT count(*) FROM goals WHERE status IN ('queued', 'active')"
    fi
}

# the machine's busy ticks, every CPU and every process (a cross-check:
# other sessions' work shows here too)
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

# one_run: prints "goald_ticks postgres_ticks completed wall_ms machine_ticks"
one_run() {
    local i p0=0 p1=0 st t0 t1 m0 m1 done_n repo
    rm -rf "$W/r" "$W/state" "$W/db"
    mkdir -p "$W/r" "$W/db"
    if [ "$BACKEND" = pg ]; then
        local schema="b$(date +%s%N)"
        psql -qX "$URL" -c "CREATE SCHEMA $schema" >/dev/null
        export GOALD_DB="$URL&options=-csearch_path%3D$schema"
    else
        export GOALD_DB="$W/db/goald.db"
    fi
    "$G" migrate >/dev/null
    for ((i = 1; i <= N; i++)); do
        if [ "$BACKEND" = pg ]; then
            cp -r "$W/seed.git" "$W/r/$i.git"
            repo="$W/r/$i.git"
        else
            cp -r "$W/seed" "$W/r/$i"
            repo="$W/r/$i"
        fi
        jq -n --arg repo "$repo" --arg t "bench goal $i" '{title: $t, repo: $repo,
            base_branch: "main", success_criteria: ["the gate passes"],
            verification: [{name: "true", type: "test", command: "true", must_pass: true}],
            publish: {push: false, pull_request: false}}' | "$G" submit - >/dev/null
    done
    local s0=
    if [ "$BACKEND" = pg ]; then
        s0=$(pg_counts)
        [ -z "${BENCH_PG_STATEMENTS:-}" ] || psql -qXAt "$SUPER" -c "SELECT pg_stat_statements_reset()" >/dev/null
        coproc POLL { psql -qXAt "$GOALD_DB"; }
        POLL_PID=$POLL_PID
        p0=$(pg_ticks)
    fi
    t0=$(date +%s%3N)
    m0=$(machine_ticks)
    local c0=0 c1=0 q0=0 q1=0
    if [ -n "${BENCH_CGROUP:-}" ]; then
        c0=$(cat "$BENCH_CGROUP/goald/cpuacct.usage")
        q0=$(cat "$BENCH_CGROUP/pg/cpuacct.usage")
        CG=$BENCH_CGROUP/goald sh -c 'echo $$ >"$CG/cgroup.procs" && exec "$0" daemon' "$G" 2>"$W/daemon.err" &
    else
        "$G" daemon 2>"$W/daemon.err" &
    fi
    DPID=$!
    while :; do
        sleep 1
        [ "$(open_goals)" = 0 ] && break
        kill -0 "$DPID" 2>/dev/null || { echo "the daemon exited:" >&2; tail -n 5 "$W/daemon.err" >&2; exit 1; }
    done
    st=$(tree_ticks "$DPID")
    m1=$(machine_ticks)
    if [ -n "${BENCH_CGROUP:-}" ]; then
        c1=$(cat "$BENCH_CGROUP/goald/cpuacct.usage")
        q1=$(cat "$BENCH_CGROUP/pg/cpuacct.usage")
    fi
    [ "$BACKEND" = pg ] && p1=$(pg_ticks)
    kill -TERM "$DPID"
    wait "$DPID" || true
    DPID=
    if [ "$BACKEND" = pg ]; then
        kill "$POLL_PID" 2>/dev/null || true
        wait "$POLL_PID" 2>/dev/null || true
        POLL_PID=
        t1=$(psql -qXAt "$GOALD_DB" -c "SELECT max(ts) FROM events WHERE type = 'goal.completed'")
        done_n=$(psql -qXAt "$GOALD_DB" -c "SELECT count(*) FROM goals WHERE status = 'completed'")
        sleep 1.2 # a backend's counters reach the shared statistics within a second
        echo "$s0 $(pg_counts)" | awk -v n="$N" '{printf "  per goal: %.1f connections, %.0f transactions (every client, the bench'"'"'s included)\n", ($3 - $1) / n, ($4 - $2) / n}' >&2
        if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
            psql -qXAt "$SUPER" -F ' ' -c "SELECT round(sum(calls) / $N.0, 1) FROM pg_stat_statements" |
                awk '{print "  statements per goal: " $1}' >&2
            psql -qXAt "$SUPER" -F ' | ' -c "SELECT round(calls / $N.0, 1), round(total_exec_time::numeric / $N, 2), left(regexp_replace(query, '\s+', ' ', 'g'), 110)
                FROM pg_stat_statements ORDER BY calls DESC LIMIT ${BENCH_PG_TOP:-25}" | sed 's/^/    /' >&2
        fi
    else
        t1=$(sqlite3 "$GOALD_DB" "SELECT max(ts) FROM events WHERE type = 'goal.completed'")
        done_n=$(sqlite3 "$GOALD_DB" "SELECT count(*) FROM goals WHERE status = 'completed'")
    fi
    echo "$st $((p1 - p0)) $done_n $((t1 - t0)) $((m1 - m0)) $((c1 - c0)) $((q1 - q0))"
}

# summary FILE LABEL: the medians of FILE's runs
summary() {
    local f=$1 g p t m w
    g=$(awk -v n="$N" -v hz="$HZ" '{print 1000 * $1 / hz / n}' "$f" | median)
    p=$(awk -v n="$N" -v hz="$HZ" '{print 1000 * $2 / hz / n}' "$f" | median)
    t=$(awk -v n="$N" -v hz="$HZ" '{print 1000 * ($1 + $2) / hz / n}' "$f" | median)
    m=$(awk -v n="$N" -v hz="$HZ" '{print 1000 * $5 / hz / n}' "$f" | median)
    w=$(awk -v n="$N" '{print $4 / n}' "$f" | median)
    printf "%s: CPU per goal (median of %d): goald %.1f ms, postgres %.1f ms, total %.1f ms (the whole machine %.1f ms); wall %.1f ms/goal\n" \
        "$2" "$RUNS" "$g" "$p" "$t" "$m" "$w"
    if [ -n "${BENCH_CGROUP:-}" ]; then
        g=$(awk -v n="$N" '{print $6 / 1e6 / n}' "$f" | median)
        p=$(awk -v n="$N" '{print $7 / 1e6 / n}' "$f" | median)
        t=$(awk -v n="$N" '{print ($6 + $7) / 1e6 / n}' "$f" | median)
        printf "%s: CPU per goal by cgroup (median of %d): goald %.1f ms, postgres %.1f ms, total %.1f ms\n" "$2" "$RUNS" "$g" "$p" "$t"
    fi
}

[ -z "${BENCH_CGROUP:-}" ] || mkdir -p "$BENCH_CGROUP/goald" "$BENCH_CGROUP/pg"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs); $N goals of 3 chained items a run, script model at once, $RUNS runs; $G${BEFORE:+, before: $BEFORE}"
for BACKEND in "$@"; do
    URL=
    if [ "$BACKEND" = pg ]; then
        PGD=$(mktemp -d /tmp/goald-bcp.XXXXXX)
        URL=$("$PGS" start "$PGD")
        SUPER="${URL/user=goald/user=postgres}"
        if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
            printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = top\n" >>"$PGD/data/postgresql.conf"
            "$PGS" restart "$PGD" >/dev/null
            psql -qXAt "$SUPER" -c "CREATE EXTENSION pg_stat_statements" >/dev/null
        fi
        if [ -n "${BENCH_PG_PERF:-}" ]; then
            perf record -q -F 2000 -g -p "$(head -n1 "$PGD/data/postmaster.pid")" -o "$BENCH_PG_PERF" 2>/dev/null &
            PERF_PID=$!
        fi
        if [ -n "${BENCH_CGROUP:-}" ]; then
            pm=$(head -n1 "$PGD/data/postmaster.pid")
            for p in $pm $(pgrep -P "$pm"); do echo "$p" >"$BENCH_CGROUP/pg/cgroup.procs"; done
        fi
    fi
    : >"$W/res.before"
    : >"$W/res"
    for ((run = 1; run <= RUNS; run++)); do
        for which in ${BEFORE:+before} after; do
            if [ "$which" = before ]; then G=$BEFORE res=$W/res.before; else G=$AFTER res=$W/res; fi
            one_run | tee -a "$res" | awk -v n="$N" -v hz="$HZ" -v b="$BACKEND${BEFORE:+ $which}" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
                '{printf "%s run: %d of %d completed, wall %.1f ms/goal, CPU/goal goald %.1f ms, postgres %.1f ms, total %.1f ms; cgroups goald %.1f ms, postgres %.1f ms; the whole machine %.1f ms (load %s)\n",
                  b, $3, n, $4 / n, 1000 * $1 / hz / n, 1000 * $2 / hz / n, 1000 * ($1 + $2) / hz / n, $6 / 1e6 / n, $7 / 1e6 / n, 1000 * $5 / hz / n, l}' >&2
        done
    done
    [ -z "$BEFORE" ] || summary "$W/res.before" "$BACKEND before"
    summary "$W/res" "$BACKEND${BEFORE:+ after}"
    if [ -n "${PERF_PID:-}" ]; then
        kill -INT "$PERF_PID"
        wait "$PERF_PID" || true
        PERF_PID=
    fi
    if [ -n "$PGD" ]; then
        "$PGS" stop "$PGD" >/dev/null 2>&1 || true
        rm -rf "$PGD"
        PGD=
    fi
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
