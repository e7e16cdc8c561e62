#!/usr/bin/env bash
# bench_daemon.sh GOALD_BINARY [IDLE_SECONDS] [N] - the daemon's figures:
#   1. an idle daemon (nothing queued, default 1 s tick): RSS (VmRSS and
#      RssAnon from /proc/PID/status) and CPU over IDLE_SECONDS (default
#      60) from /proc/PID/stat utime+stime;
#   2. latency from `goald submit` (the moment before it is started) to the
#      first job start (the job's `run.started` event; the claim's
#      `run.claimed` is shown too) with the daemon idle: median of N
#      (default 20);
#   3. a one-item goal end to end (elaborate, plan, execute with the edit
#      tool, gate `true` in the sandbox, review, commit, publish without a
#      remote) with the script provider answering at once: from before
#      `goald submit` to the goal's `goal.completed` event; median of N.
# Numbers on stdout; results are recorded in bench/RESULTS.md ("## Daemon").
set -euo pipefail
G=${1:?usage: bench_daemon.sh GOALD_BINARY [IDLE_SECONDS] [N]}
IDLE=${2:-60}
N=${3:-20}
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-daemon.XXXXXX")
trap 'kill "${DPID:-}" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
export GOALD_DB="$W/goald.db" HOME="$W/home" XDG_STATE_HOME="$W/state" XDG_CONFIG_HOME="$W/config"
export GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$W/s.jsonl"
unset GOALD_CONFIG GOALD_LLM_BASE_URL GOALD_LLM_MODEL GOALD_LLM_API_KEY GOALD_LLM_MODELS
mkdir -p "$HOME"
sql() { sqlite3 -cmd ".timeout 5000" "$GOALD_DB" "$1"; }
now_ms() { date +%s%3N; }
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# the script: N goals for (2) and N for (3), identical answers per stage
{
    for _ in $(seq 1 $((2 * N + 2))); do
        echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["read","edit"],"verification":[]}}'
        echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"make add.sh add","type":"code","effort":"S","depends_on":[]}]}}'
        echo '{"stage":"execute","tool_calls":[{"name":"edit","arguments":{"path":"add.sh","old_text":"$(($1 - $2))","new_text":"$(($1 + $2))"}},{"name":"complete","arguments":{"summary":"add.sh adds"}}]}'
        echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
    done
} >"$GOALD_LLM_SCRIPT"

. "$(dirname "$0")/lib.sh"
make_goal() { bench_make_goal "$W" "$1"; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
"$G" migrate >/dev/null 2>&1 || true
bench_start_daemon "$G"
sleep 2

# 1. idle
ticks() { awk '{print $14 + $15}' "/proc/$DPID/stat"; }
hz=$(getconf CLK_TCK)
c0=$(ticks); t0=$(now_ms)
sleep "$IDLE"
c1=$(ticks); t1=$(now_ms)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$DPID/status")
anon=$(awk '/^RssAnon/ {print $2}' "/proc/$DPID/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$DPID/status")
cpu=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v ms=$((t1 - t0)) 'BEGIN {printf "%.3f", 100 * c / hz / (ms / 1000)}')
echo "idle: ${IDLE} s, VmRSS ${rss} KiB (RssAnon ${anon} KiB, VmHWM ${hwm} KiB), CPU ${cpu}% ($((c1 - c0)) ticks of 1/${hz} s)"

# 2. submit -> first job start, daemon idle; 3. one-item goal end to end
run_goal() { # I -> "start_ms claim_ms completed_ms" relative to before submit
    local id t
    t=$(now_ms)
    id=$("$G" submit "$W/goal$1.json" | tail -n1)
    while [ "$(sql "SELECT status FROM goals WHERE id = '$id'")" != completed ]; do
        case "$(sql "SELECT status FROM goals WHERE id = '$id'")" in
        failed | blocked | cancelled) echo "goal $1 did not complete" >&2; exit 1 ;;
        esac
        sleep 0.02
    done
    sql "SELECT (SELECT min(ts) FROM events WHERE goal_id = '$id' AND type = 'run.started') - $t,
                (SELECT min(ts) FROM events WHERE goal_id = '$id' AND type = 'run.claimed') - $t,
                (SELECT max(ts) FROM events WHERE goal_id = '$id' AND type = 'goal.completed') - $t,
                (SELECT min(ts) FROM events WHERE goal_id = '$id' AND type = 'goal.submitted') - $t" | tr '|' ' '
    sleep 1.2 # idle again: at least one whole tick without work
}
for i in $(seq 1 "$N"); do make_goal "$i"; done
: >"$W/results"
for i in $(seq 1 "$N"); do run_goal "$i" >>"$W/results"; done
echo "submit -> first job start (run.started): median $(awk '{print $1}' "$W/results" | median) ms," \
    "min $(awk '{print $1}' "$W/results" | sort -n | head -n1), max $(awk '{print $1}' "$W/results" | sort -n | tail -n1) (n=$N)"
echo "  of which: submit process until its goal.submitted event: median $(awk '{print $4}' "$W/results" | median) ms;" \
    "goal.submitted -> run.claimed (the daemon's wake and claim): median $(awk '{print $2 - $4}' "$W/results" | median) ms;" \
    "run.claimed -> run.started (fork, exec, open): median $(awk '{print $1 - $2}' "$W/results" | median) ms"
echo "one-item goal end to end (submit -> goal.completed): median $(awk '{print $3}' "$W/results" | median) ms," \
    "min $(awk '{print $3}' "$W/results" | sort -n | head -n1), max $(awk '{print $3}' "$W/results" | sort -n | tail -n1) (n=$N)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# per-stage breakdown of the last goal, for reading
sql "SELECT kind, ended_at - started_at FROM runs WHERE goal_id = (SELECT id FROM goals ORDER BY created_at DESC LIMIT 1) ORDER BY created_at" |
    tr '\n' ' ' | sed 's/^/last goal, run durations (ms): /'
echo
sql "SELECT ts - (SELECT min(ts) FROM events e2 WHERE e2.goal_id = e.goal_id), type FROM events e
     WHERE goal_id = (SELECT id FROM goals ORDER BY created_at DESC LIMIT 1) ORDER BY id" |
    tr '\n' ' ' | sed 's/^/last goal, events (ms after goal.submitted): /'
echo
