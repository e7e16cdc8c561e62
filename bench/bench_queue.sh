#!/usr/bin/env bash
# bench_queue.sh GOALD_BINARY [N ...] - what a goal costs as the queue
# grows.  For each N (default 100 1000): a fresh SQLite database, N goals
# of three chained items queued at once (`goald submit`, each on a
# repository of its own, local mode), then `goald daemon` (the default
# tick and lanes) until every goal has ended.  The script provider
# answers at once (stage-keyed lines: elaborate, plan, then execute and
# review per item; the execute line appends to a file with the bash tool).
# The script holds the answers for the largest N in every run
# (BENCH_SCRIPT_GOALS sets another size): each job parses the whole
# script (llm/script.c), a cost that grows with the script, not with the
# queue, and would otherwise be counted as the queue's.
# Per goal: wall time (daemon start -> the last goal.completed event, / N)
# and CPU (the daemon's utime + stime and its reaped children's, from
# /proc/PID/stat just before it is stopped, / N); the daemon's own CPU;
# the mean duration of a run per kind (is a job's cost flat?).  Then the
# ratios to the first N.  BENCH_TICK_MS sets daemon.tick_ms;
# BENCH_SNAPSHOT=FILE keeps a copy of the database of the last N taken
# when half its goals have completed (for bench_queue_sql.py).
# Results are recorded in bench/RESULTS.md ("## Queue").
set -euo pipefail
G=$(realpath "${1:?usage: bench_queue.sh GOALD_BINARY [N ...]}")
shift
[ $# -gt 0 ] || set -- 100 1000
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-queue.XXXXXX")
trap '[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
export HOME="$W/home" XDG_STATE_HOME="$W/state" XDG_CONFIG_HOME="$W/config"
export GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$W/s.jsonl"
[ -n "${BENCH_TICK_MS:-}" ] && export GOALD_DAEMON_TICK_MS=$BENCH_TICK_MS
unset GOALD_CONFIG GOALD_LLM_BASE_URL GOALD_LLM_MODEL GOALD_LLM_API_KEY GOALD_LLM_MODELS
mkdir -p "$HOME"
hz=$(getconf CLK_TCK)
now_ms() { date +%s%3N; }

mkdir -p "$W/seed"
git -C "$W/seed" init -q -b main
echo "work log" >"$W/seed/work.log"
git -C "$W/seed" add -A
git -C "$W/seed" -c user.email=b@example.com -c user.name=b commit -q -m init

# the answers for n goals: per stage, one line per request
write_script() {
    local n=$1 i
    {
        for ((i = 0; i < n + 2; i++)); do
            echo '{"stage":"elaborate","content":{"components":["work.log"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["read","edit","bash"],"verification":[]}}'
            echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"item 1","type":"code","effort":"S","depends_on":[]},{"key":"wi-2","title":"item 2","type":"code","effort":"S","depends_on":["wi-1"]},{"key":"wi-3","title":"item 3","type":"code","effort":"S","depends_on":["wi-2"]}]}}'
        done
        for ((i = 0; i < 3 * n + 6; i++)); do
            echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"date +%s%N >> work.log"}},{"name":"complete","arguments":{"summary":"appended a line to work.log"}}]}'
            echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
        done
    } >"$GOALD_LLM_SCRIPT"
}

# copy_goals N: goals 2..N as copies of the one goal submitted
copy_goals() {
    local cols sel
    cols=$(sqlite3 "$GOALD_DB" "SELECT group_concat(name, ', ') FROM pragma_table_info('goals')")
    sel=$(echo "$cols" | sed -e "s/^id,/u,/" -e "s/, title,/, 'bench goal ' || i,/" -e "s#, repo,#, '$W/r/' || i,#" \
        -e "s#, spec,#, json_set(spec, '\$.repo', '$W/r/' || i, '\$.title', 'bench goal ' || i),#" \
        -e "s/, created_at,/, created_at + i,/" -e "s/, updated_at,/, updated_at + i,/")
    sqlite3 "$GOALD_DB" "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < $1),
        k(i, h) AS MATERIALIZED (SELECT i, lower(hex(randomblob(16))) FROM n)
        INSERT INTO goals ($cols) SELECT $(echo "$sel" | sed "s/^u,/substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-8' || substr(h, 18, 3) || '-' || substr(h, 21, 12),/")
        FROM k, goals WHERE goals.id = (SELECT id FROM goals LIMIT 1)"
}

# one_run N: prints "N wall_s daemon_cpu_s children_cpu_s completed"
one_run() {
    local n=$1 i t0 t1 st open
    rm -rf "$W/r" "$W/state" "$W/db"
    mkdir -p "$W/r" "$W/db"
    export GOALD_DB="$W/db/goald.db"
    "$G" migrate >/dev/null
    write_script "$SCRIPT_GOALS"
    # one goal through `goald submit`, the others copies of its row (a
    # repository of their own, new ids, one millisecond apart): the same
    # queue, without 10,000 submit processes
    for ((i = 1; i <= n; i++)); do cp -r "$W/seed" "$W/r/$i"; done
    jq -n --arg repo "$W/r/1" '{title: "bench goal 1", repo: $repo,
        base_branch: "main", success_criteria: ["the gate passes"],
        verification: [{name: "true", type: "test", command: "true", must_pass: true}],
        publish: {push: false, pull_request: false}}' >"$W/goal.json"
    "$G" submit "$W/goal.json" >/dev/null
    copy_goals "$n"
    t0=$(now_ms)
    "$G" daemon 2>"$W/daemon.err" &
    DPID=$!
    while :; do
        sleep 1
        open=$(sqlite3 -cmd ".timeout 5000" "$GOALD_DB" \
            "SELECT count(*) FROM goals WHERE status IN ('queued', 'active')")
        [ "$open" = 0 ] && break
        if [ -n "${BENCH_SNAPSHOT:-}" ] && [ "$n" = "$last" ] && [ ! -e "$BENCH_SNAPSHOT" ] && [ "$open" -le $((n / 2)) ]; then
            sqlite3 -cmd ".timeout 5000" "$GOALD_DB" ".backup '$BENCH_SNAPSHOT'"
        fi
        kill -0 "$DPID" 2>/dev/null || { echo "the daemon exited" >&2; exit 1; }
    done
    st=$(awk '{print $14 + $15, $16 + $17}' "/proc/$DPID/stat")
    kill -TERM "$DPID"
    wait "$DPID" || true
    DPID=
    t1=$(sqlite3 "$GOALD_DB" "SELECT max(ts) FROM events WHERE type = 'goal.completed'")
    echo "  run durations, mean ms by kind at N=$n: $(sqlite3 "$GOALD_DB" \
        "SELECT group_concat(kind || ' ' || ms, ', ') FROM (SELECT kind, CAST(avg(ended_at - started_at) AS INT) ms
         FROM runs GROUP BY kind ORDER BY kind)")" >&2
    echo "$n $(((t1 - t0))) $st $(sqlite3 "$GOALD_DB" "SELECT count(*) FROM goals WHERE status = 'completed'")" |
        awk -v hz="$hz" '{printf "%d %.2f %.2f %.2f %d\n", $1, $2 / 1000, $3 / hz, $4 / hz, $5}'
}

last=0
for n in "$@"; do [ "$n" -gt "$last" ] && last=$n; done
SCRIPT_GOALS=${BENCH_SCRIPT_GOALS:-$last}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs); goals of 3 chained items, SQLite, script model at once (a script for $SCRIPT_GOALS goals)"
: >"$W/results"
for n in "$@"; do
    one_run "$n" | tee -a "$W/results" | awk '{printf "N=%d: %d of %d completed, wall %.1f s, daemon CPU %.2f s, children CPU %.2f s\n", $1, $5, $1, $2, $3, $4}'
done
awk 'NR == 1 {bw = 1000 * $2 / $1; bc = 1000 * ($3 + $4) / $1; bd = 1000 * $3 / $1}
     {w = 1000 * $2 / $1; c = 1000 * ($3 + $4) / $1; d = 1000 * $3 / $1
      printf "N=%-6d per goal: wall %7.1f ms (x%.2f), CPU %7.1f ms (x%.2f), of it the daemon %6.1f ms (x%.2f)\n",
             $1, w, w / bw, c, c / bc, d, d / bd}' "$W/results"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
