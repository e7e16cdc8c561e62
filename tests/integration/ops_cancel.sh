#!/usr/bin/env bash
# `goald cancel` stops the goal's running job.  A goal is
# in its execute stage against a slow model (each answer 1.5 s) under a
# running daemon; cancel returns only once the job is gone: its run is
# aborted with reason cancelled, the job's process (group) is gone, no
# model request arrives after cancel returned, and nobody tries to move
# the cancelled goal or item again ("cannot go from cancelled ...").
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

make_project "$T/repo"
cat >"$T/llm.jsonl" <<'JSON'
{"content": {"components":["add.sh"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["ls","read","edit","bash","run_gates"],"verification":[]}}
{"content": {"work_items":[{"key":"wi-1","title":"look around","description":"list files","type":"code","effort":"S","critical":true,"depends_on":[]}]}}
{"hang_ms": 1500, "tool_calls": [{"name": "ls", "arguments": {"path": "."}}], "repeat": 0}
JSON
start_fake_llm llm openai "$T/llm.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m GOALD_LLM_API_KEY=sk-test-0123456789abcdef
goal_json "$T/repo" "a goal cancelled while its model thinks" >"$T/g.json"
submit_goal "$T/g.json"
gid=$GOAL_ID

"$G" daemon --log-file "$T/daemon.jsonl" >"$T/daemon.out" 2>&1 &
dpid=$!
trap 'kill -TERM $dpid 2>/dev/null; wait $dpid 2>/dev/null; cleanup' EXIT
running_execute() {
    [ "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'running' AND pid IS NOT NULL")" = 1 ] &&
        [ "$(fake_requests)" -ge 4 ]
}
wait_until 60 running_execute
run_id=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running'")
pid=$(sql "SELECT pid FROM runs WHERE id = '$run_id'")
kill -0 "$pid" 2>/dev/null || fail "the job process $pid is not running"
ok

run "$G" cancel "$gid"
expect_rc 0 "cancel"
after=$(fake_requests)
msg=$OUT
# the job is gone by now (at most a zombie until the daemon reaps it)
state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
case "$state" in gone|Z) ok ;; *) fail "job process $pid still $state after cancel returned" ;; esac
expect_eq "$(sql "SELECT status || ' ' || failure_reason FROM runs WHERE id = '$run_id'")" "aborted cancelled" \
    "the run"
expect_eq "$(sql "SELECT json_extract(payload, '\$.reason') FROM events WHERE run_id = '$run_id' AND type = 'run.aborted'")" \
    cancelled "run.aborted event"
sleep 4
expect_eq "$(fake_requests)" "$after" "model requests after cancel returned"
OUT=$msg
expect_out "stopped 1 running job" "cancel says it stopped the job"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs still running"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$gid'")" cancelled "goal"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE goal_id = '$gid' AND created_at > (SELECT max(ts) FROM events WHERE type = 'goal.cancelled')")" \
    0 "runs claimed after the cancel"
if grep -q "cannot go from cancelled" "$T/daemon.jsonl" "$T/daemon.out"; then
    fail "a cancelled goal or item was moved again: $(grep "cannot go from" "$T/daemon.jsonl" "$T/daemon.out" | head -2)"
fi
ok
kill -0 "$pid" 2>/dev/null && fail "job process $pid not reaped"
ok

# cancelling again is refused, naming the state
run "$G" cancel "$gid"
expect_rc 1 "second cancel"
expect_err "cancelled" "second cancel names the state"
done_tests
