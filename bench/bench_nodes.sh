#!/usr/bin/env bash
# bench_nodes.sh GOALD_BINARY [GOALS] [RUNS] - throughput of one node
# against two on one PostgreSQL queue.
#
# GOALS goals (default 200) of 3 items each, on bare remotes (clone mode),
# a scripted model answering every call in 200 ms (the script provider's
# sleep_ms; BENCH_MODEL_MS sets another latency), the gate `true`.  Each node: daemon.plan_cap 1, work_cap 3
# (the defaults); two nodes run on this machine with separate state
# folders.  Measured from the first daemon start to the last goal's
# completion; goals per minute; RUNS times each (default 1), medians, and
# the ratio two/one.  A server of its own (tests/pg/pg-server).
# Results go in bench/RESULTS.md ("## Nodes").
set -euo pipefail
G=$(realpath "${1:?usage: bench_nodes.sh GOALD_BINARY [GOALS] [RUNS]}")
N=${2:-200}
RUNS=${3:-1}
SRC=$(cd "$(dirname "$0")/.." && pwd)
PGS="$SRC/tests/pg/pg-server"
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-nodes.XXXXXX")
PGD=$(mktemp -d /tmp/goald-bnp.XXXXXX)
trap 'for p in $(cat "$W/pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; "$PGS" stop "$PGD" >/dev/null 2>&1; rm -rf "$W" "$PGD"' EXIT
export HOME="$W/home" XDG_STATE_HOME="$W/state" XDG_CONFIG_HOME="$W/config"
export GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$W/s.jsonl" GOALD_DAEMON_TICK_MS=1000
# each node's lanes (BENCH_PLAN_CAP, BENCH_WORK_CAP; the defaults 1 and 3)
export GOALD_DAEMON_PLAN_CAP=${BENCH_PLAN_CAP:-1} GOALD_DAEMON_WORK_CAP=${BENCH_WORK_CAP:-3}
unset GOALD_CONFIG GOALD_LLM_BASE_URL GOALD_LLM_MODEL GOALD_LLM_API_KEY GOALD_LLM_MODELS
mkdir -p "$HOME"
URL=$("$PGS" start "$PGD")
cpu_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; } # busy, all CPUs
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
now_ms() { date +%s%3N; }

# every answer after 200 ms (BENCH_MODEL_MS); the same answers for every goal
MS=${BENCH_MODEL_MS:-200}
{
    for _ in $(seq 1 $((N + 2))); do
        echo '{"stage":"elaborate","sleep_ms":'"$MS"',"content":{"components":["work.log"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["read","edit","bash"],"verification":[]}}'
        echo '{"stage":"plan","sleep_ms":'"$MS"',"content":{"work_items":[{"key":"wi-1","title":"item 1","type":"code","effort":"S","depends_on":[]},{"key":"wi-2","title":"item 2","type":"code","effort":"S","depends_on":["wi-1"]},{"key":"wi-3","title":"item 3","type":"code","effort":"S","depends_on":["wi-2"]}]}}'
    done
    for _ in $(seq 1 $((N * 3 + 6))); do
        echo '{"stage":"execute","sleep_ms":'"$MS"',"tool_calls":[{"name":"bash","arguments":{"command":"date +%s%N >> work.log"}},{"name":"complete","arguments":{"summary":"appended a line to work.log"}}]}'
        echo '{"stage":"review","sleep_ms":'"$MS"',"content":{"verdict":"pass","findings":[]}}'
    done
} >"$W/s.jsonl"

# one bare remote per goal, made once and copied for each run
mkdir -p "$W/seed"
git -C "$W/seed" init -q -b main
echo "work log" >"$W/seed/work.log"
git -C "$W/seed" add -A
git -C "$W/seed" -c user.email=b@example.com -c user.name=b commit -q -m init
git clone -q --bare "$W/seed" "$W/seed.git"

# one_run NODES: a fresh schema, N goals, NODES daemons; prints the seconds
one_run() {
    local nodes=$1 schema db t0 t1 i open
    schema="b$(date +%s%N)"
    psql -qX "$URL" -c "CREATE SCHEMA $schema" >/dev/null
    db="$URL&options=-csearch_path%3D$schema"
    export GOALD_DB=$db
    "$G" migrate >/dev/null
    rm -rf "$W/r" "$W/n"
    mkdir -p "$W/r" "$W/n"
    for i in $(seq 1 "$N"); do
        cp -r "$W/seed.git" "$W/r/$i.git"
        jq -n --arg repo "$W/r/$i.git" --arg t "bench goal $i" '{title: $t, repo: $repo,
            base_branch: "main", success_criteria: ["the gate passes"],
            verification: [{name: "true", type: "test", command: "true", must_pass: true}],
            publish: {push: false, pull_request: false}}' | "$G" submit - >/dev/null
    done
    t0=$(now_ms)
    c0=$(cpu_ticks)
    for i in $(seq 1 "$nodes"); do
        mkdir -p "$W/n/$i"
        GOALD_NODE_ID="n$i" GOALD_NODE_STATE_DIR="$W/n/$i" GOALD_VCS_WORKTREE_ROOT="$W/n/$i/wt" \
            "$G" daemon 2>>"$W/n/$i.err" &
        echo $! >>"$W/pids"
    done
    while :; do
        open=$(psql -qXAt "$db" -c "SELECT count(*) FROM goals WHERE status IN ('queued', 'active')")
        [ "$open" = 0 ] && break
        sleep 2 # a psql is a new server backend: polling is not free (the end time is read from the events)
    done
    t1=$(psql -qXAt "$db" -c "SELECT max(ts) FROM events WHERE type = 'goal.completed'")
    c1=$(cpu_ticks)
    # how busy the machine was (every process, not only goald's): is it the
    # limit?
    awk -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v ms=$(($(now_ms) - t0)) -v n="$(nproc)" \
        'BEGIN {printf "  machine busy: %.0f%% of %d CPUs\n", 100 * c / hz / (ms / 1000) / n, n}' >&2
    for p in $(cat "$W/pids"); do kill -TERM "$p" 2>/dev/null || true; done
    for p in $(cat "$W/pids"); do wait "$p" 2>/dev/null || true; done
    : >"$W/pids"
    local done_n
    done_n=$(psql -qXAt "$db" -c "SELECT count(*) FROM goals WHERE status = 'completed'")
    [ "$done_n" = "$N" ] || echo "warning: $done_n of $N goals completed" >&2
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", (b - a) / 1000}'
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs); $N goals of 3 items, model $MS ms a call; per node plan_cap $GOALD_DAEMON_PLAN_CAP, work_cap $GOALD_DAEMON_WORK_CAP"
: >"$W/one"
: >"$W/two"
for _ in $(seq 1 "$RUNS"); do
    one_run 1 >>"$W/one"
    echo "one node: $(tail -n1 "$W/one") s" >&2
    one_run 2 >>"$W/two"
    echo "two nodes: $(tail -n1 "$W/two") s" >&2
done
s1=$(median <"$W/one")
s2=$(median <"$W/two")
awk -v n="$N" -v a="$s1" -v b="$s2" 'BEGIN {
    printf "one node:  %.1f s, %.1f goals/min\n", a, 60 * n / a
    printf "two nodes: %.1f s, %.1f goals/min\n", b, 60 * n / b
    printf "ratio two/one: %.2fx\n", a / b }'
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
