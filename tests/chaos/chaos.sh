#!/usr/bin/env bash
# The chaos harness: 20 goals (script provider, real gates, real git
# repositories) while the daemon and random job processes are killed with
# SIGKILL at random moments.  At the end every goal is completed or blocked
# (waiting for a human after too many kills), no run is `running`, no item
# has two commits, PRAGMA integrity_check is ok, and the event log accounts
# for every kill.
#
#   CHAOS_SEED   the random seed (printed; default: the time)
#   CHAOS_KILLS  how many kills (default 50; CI runs a shorter form)
#   CHAOS_GOALS  how many goals (default 20)
#   CHAOS_ITEMS  items per goal (default 1: the demo's fix under its
#                tests); more: that many independent items, each writing
#                a file of its own, run side by side (chaos_items.sh)
. "$(dirname "$0")/../integration/lib.sh"

SEED=${CHAOS_SEED:-$(date +%s)}
KILLS=${CHAOS_KILLS:-50}
GOALS=${CHAOS_GOALS:-20}
ITEMS=${CHAOS_ITEMS:-1}
RANDOM=$SEED
echo "chaos: seed $SEED, $KILLS kills, $GOALS goals of $ITEMS items (rerun with CHAOS_SEED=$SEED)"
PLAN='[{"key": "wi-1", "title": "Fix the addition", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]'
EXEC='[{"name": "edit", "arguments": {"path": "add.sh", "old_text": "$(($1 - $2))", "new_text": "$(($1 + $2))"}}, {"name": "complete", "arguments": {"summary": "add.sh adds"}}]'
GATE='sh test.sh' CRIT='sh test.sh exits 0'
if [ "$ITEMS" -gt 1 ]; then
    PLAN=$(jq -nc --argjson n "$ITEMS" '[range(1; $n + 1) | {key: "wi-\(.)", title: "file \(.)",
        description: "", type: "code", priority: 50, effort: "S", critical: true, depends_on: []}]')
    EXEC='[{"name": "bash", "arguments": {"command": "echo x > f-$(date +%s%N).txt"}}, {"name": "complete", "arguments": {"summary": "a file of its own"}}]'
    GATE='ls f-*.txt' CRIT='all gates pass'
fi

{
    for i in $(seq 1 3000); do
        echo '{"stage": "elaborate", "sleep_ms": 100, "content": {"components": ["add.sh"], "implicit_requirements": [], "success_criteria": ["'"$CRIT"'"], "allowed_actions": ["read", "edit", "bash", "run_gates"], "verification": []}, "usage": {"input": 100, "output": 20}}'
        echo '{"stage": "plan", "sleep_ms": 100, "content": {"work_items": '"$PLAN"'}, "usage": {"input": 100, "output": 20}}'
        echo '{"stage": "execute", "sleep_ms": 300, "tool_calls": '"$EXEC"', "usage": {"input": 200, "output": 30}}'
        echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}, "usage": {"input": 50, "output": 10}}'
    done
} >"$T/script.jsonl"
# kills are failures: give recovery room, and retry at once
export GOALD_LLM_SCRIPT="$T/script.jsonl" GOALD_CONTROL_MAX_RETRIES=30 \
    GOALD_CONTROL_BACKOFF_BASE_MS=10 GOALD_CONTROL_BACKOFF_MAX_MS=200 GOALD_DAEMON_TICK_MS=100 \
    GOALD_DAEMON_PLAN_CAP=2

for i in $(seq 1 "$GOALS"); do
    r="$T/repo$i"
    mkdir -p "$r"
    cp "$GOALD_SOURCE_DIR/share/demo-project/"* "$r/"
    git -C "$r" init -q -b main && git -C "$r" add -A &&
        git -C "$r" -c user.email=t@e -c user.name=t commit -q -m init
    printf '{"title": "chaos %d", "repo": "%s", "verification": [{"name": "tests", "type": "test", "command": "%s", "must_pass": true}]}' \
        "$i" "$r" "$GATE" | "$G" submit - >/dev/null
done

# a kill counts once the daemon is up (it has logged daemon.started and beaten)
start_daemon() {
    "$G" daemon >>"$T/daemon.out" 2>&1 &
    DPID=$!
    for _ in $(seq 1 200); do
        [ "$(sql "SELECT pid FROM daemon_heartbeat")" = "$DPID" ] && return 0
        sleep 0.05
    done
    fail "the daemon (pid $DPID) did not start"
}
start_daemon
: >"$T/killed_runs"
daemon_kills=0 job_kills=0
while [ $((daemon_kills + job_kills)) -lt "$KILLS" ]; do
    sleep "0.$((RANDOM % 9 + 1))"
    if [ $((RANDOM % 10)) -lt 3 ]; then
        kill -KILL $DPID 2>/dev/null && daemon_kills=$((daemon_kills + 1))
        wait $DPID 2>/dev/null || true
        start_daemon
    else
        pids=$(pgrep -f "goald --db $GOALD_DB job " || true)
        [ -n "$pids" ] || continue
        set -- $pids
        pid=$(eval echo "\${$((RANDOM % $# + 1))}")
        # a job's forked child (a gate, a tool) carries the job's command line
        # until it execs: the line read now must still be the job's own
        run_id=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
            awk -v db="$GOALD_DB" '$(NF-1) == "job" && index($0, "--db " db " ") { print $NF }')
        [ -n "$run_id" ] || continue
        kill -KILL "$pid" 2>/dev/null && { job_kills=$((job_kills + 1)); echo "$run_id" >>"$T/killed_runs"; }
    fi
    open=$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT count(*) FROM goals WHERE status IN ('queued', 'active')" 2>/dev/null || echo 1)
    [ "$open" -gt 0 ] || break
done
echo "chaos: $daemon_kills daemon kills, $job_kills job kills"
[ $((daemon_kills + job_kills)) -ge "$KILLS" ] || echo "chaos: every goal finished before $KILLS kills"

# let it finish in peace
for _ in $(seq 1 600); do
    open=$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT count(*) FROM goals WHERE status IN ('queued', 'active')")
    [ "$open" -eq 0 ] && break
    sleep 0.5
done
# what a goal still open after the wait was doing (a liveness failure must
# say where it stuck: the goal, its items and runs, the daemon's last words)
if [ "$open" -ne 0 ]; then
    echo "chaos: $open goal(s) still open after 300 s of peace; now $(date +%s%3N) ms" >&2
    sql "SELECT 'goal', id, status, attempts, next_attempt_at, coalesce(blocked_reason, '') FROM goals WHERE status IN ('queued', 'active')" >&2
    sql "SELECT 'item', w.key, w.status, w.attempts, w.tier, w.next_attempt_at FROM work_items w JOIN goals g ON g.id = w.goal_id WHERE g.status IN ('queued', 'active')" >&2
    sql "SELECT 'run', r.id, r.kind, r.status, coalesce(r.pid, ''), r.created_at, coalesce(r.ended_at, ''), coalesce(r.error_class, ''), coalesce(r.failure_reason, '') FROM runs r JOIN goals g ON g.id = r.goal_id WHERE g.status IN ('queued', 'active') ORDER BY r.created_at" >&2
    sql "SELECT 'heartbeat', node_id, pid, last_tick, lanes FROM daemon_heartbeat" >&2
    echo "daemon pid $DPID alive: $(kill -0 $DPID 2>/dev/null && echo yes || echo no); job processes: $(pgrep -f "goald --db $GOALD_DB job " | tr '\n' ' ')" >&2
    tail -n 30 "$T/daemon.out" >&2
fi
kill -TERM $DPID; wait $DPID 2>/dev/null || true

expect_eq "$(sql "SELECT count(*) FROM goals WHERE status NOT IN ('completed', 'blocked')")" 0 \
    "goals neither completed nor blocked"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
expect_eq "$(sql 'PRAGMA integrity_check')" ok "integrity"
# no item has two commits
for i in $(seq 1 "$GOALS"); do
    dups=$(git -C "$T/repo$i" log --all --format='%(trailers:key=Work-Item-Id,valueonly)' |
        grep . | sort | uniq -d)
    [ -z "$dups" ] || fail "repo$i: item $dups has two commits"
    git -C "$T/repo$i" fsck --no-progress >/dev/null 2>&1 || fail "repo$i: git fsck"
done
ok
# a blocked goal is blocked for a reason a human can see
expect_eq "$(sql "SELECT count(*) FROM goals g WHERE status = 'blocked' AND NOT EXISTS (SELECT 1 FROM escalations e WHERE e.goal_id = g.id AND e.status = 'open')")" 0 \
    "blocked goals without an open escalation"
# the event log accounts for every kill
while read -r run; do
    n=$(sql "SELECT count(*) FROM events WHERE run_id = '$run' AND type IN ('run.aborted', 'run.timeout', 'run.success', 'run.failed')")
    [ "$n" -ge 1 ] || fail "killed job of run $run left no trace in the event log"
done <"$T/killed_runs"
ok
starts=$(sql "SELECT count(*) FROM events WHERE type = 'daemon.started'")
[ "$starts" -ge $((daemon_kills + 1)) ] || fail "$daemon_kills daemon kills but $starts daemon starts logged"
ok
echo "chaos: $(sql "SELECT count(*) FROM goals WHERE status = 'completed'") completed, $(sql "SELECT count(*) FROM goals WHERE status = 'blocked'") blocked, $(sql "SELECT count(*) FROM runs WHERE status = 'aborted'") runs aborted and recovered"
done_tests
