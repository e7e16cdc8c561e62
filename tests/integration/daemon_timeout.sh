#!/usr/bin/env bash
# A job that hangs past its lane's timeout (a bash tool call whose
# grandchild sleeps) is killed with everything under it — the grandchild's
# process is gone — its run is marked `timeout`, and the retry gets twice
# the time (work_items.timeout_s, the next run's timeout_s) and finishes.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50
export GOALD_LANE_WORK_TIMEOUT_S=3 GOALD_DAEMON_KILL_GRACE_S=1
marker="98765.$$"  # this test's own: both builds' suites run side by side
{
    script_generic 1 0 1 | grep -v '"stage":"execute"' | head -n 4
    # the first execute answer hangs: a grandchild sleeps and writes its pid
    jq -nc --arg m "$marker" '{stage: "execute", tool_calls: [{name: "bash", arguments: {
        command: "sh -c \"sleep \($m) & echo $! > hang.pid; wait\"", timeout_s: 600}}]}'
    script_generic 1 0 1 | grep '"stage":"execute"'
} >"$GOALD_LLM_SCRIPT"
make_project "$T/r"
goal_json "$T/r" "goal t" >"$T/g.json"
submit_goal "$T/g.json"

# the host's pid of the sleeping grandchild (the sandbox has its own pid
# namespace, so the pid it writes is not the host's)
find_hang() {
    HANG_PID=$(pgrep -f "^sleep $marker" | head -n1)
    [ -n "$HANG_PID" ]
}

"$G" daemon --once --log-file "$T/d.log" 2>"$T/daemon.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
wait_until 30 find_hang
hang=$HANG_PID
run1=$(sql "SELECT id FROM runs WHERE kind = 'execute' ORDER BY created_at LIMIT 1")
jobpid=$(sql "SELECT pid FROM runs WHERE id = '$run1'")
kill -0 "$hang" || fail "the grandchild is not running"; ok
timed_out() { [ "$(sql "SELECT status FROM runs WHERE id = '$run1'")" = timeout ]; }
wait_until 30 timed_out
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_until 3 gone "$hang"
ok
wait_until 3 gone "$jobpid"
ok
wait "$DPID" || fail "daemon --once exited $?: $(tail -5 "$T/daemon.err")"
ok
# the grandchild did run in the worktree: it wrote its (namespace) pid
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'run.timeout' AND run_id = '$run1'")" 1 "run.timeout event"
expect_eq "$(sql "SELECT error_class || ' ' || timeout_s FROM runs WHERE id = '$run1'")" "timeout 3" "the timed-out run"
expect_eq "$(sql "SELECT failure_reason FROM runs WHERE id = '$run1'")" "killed after its timeout of 3 s" "reason"
expect_eq "$(sql "SELECT timeout_s FROM work_items")" 6 "the item's doubled timeout"
expect_eq "$(sql "SELECT status || ' ' || timeout_s FROM runs WHERE kind = 'execute' AND id <> '$run1'")" "success 6" \
    "the retry ran with twice the time"
expect_eq "$(sql "SELECT json_extract(payload, '\$.timeout_s') FROM events WHERE type = 'run.claimed' AND json_extract(payload, '\$.kind') = 'execute' ORDER BY id DESC LIMIT 1")" 6 \
    "the retry's claim"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"
# the log's lines for the two runs: what happened, the attempt, how long, why
line=$(jq -c --arg r "$run1" 'select(.run == $r and .event == "job.aborted")' "$T/d.log")
expect_eq "$(printf '%s' "$line" | jq -r '[.status, .attempt, .failure, .item != null] | join("|")')" \
    "timeout|1|killed after its timeout of 3 s|true" "the log line of the timed-out job"
[ "$(printf '%s' "$line" | jq -r .duration_ms)" -ge 3000 ] || fail "duration_ms: $line"; ok
run2=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND id <> '$run1'")
expect_eq "$(jq -r --arg r "$run2" 'select(.run == $r and .event == "job.finished") | [.level, .status, .attempt, has("failure")] | map(tostring) | join("|")' "$T/d.log")" \
    "info|success|2|false" "the log line of the retry"
find_hang && fail "a process \"sleep $marker\" (pid $HANG_PID) is left"
ok
done_tests
