#!/usr/bin/env bash
# Leases: a running job renews its run's lease before each model
# call; a restarted daemon that finds a job still alive but its lease
# expired (a job that stopped renewing: hung) kills the job's group, marks
# the run `aborted` ("its lease expired") and recovers: the item runs again
# from the branch head and is committed once.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50
bash_call() { # SLEEP_MS COMPLETE(0/1): an execute answer appending to work.log
    jq -nc --argjson s "$1" --argjson c "$2" '{stage: "execute", sleep_ms: $s, tool_calls: (
        [{name: "bash", arguments: {command: "date +%s%N >> work.log"}}]
        + (if $c == 1 then [{name: "complete", arguments: {summary: "appended a line"}}] else [] end))}'
}
{
    script_generic 1 0 1 | grep -v '"stage":"execute"' | head -n 2
    bash_call 1500 0 # turn 1 of the first run
    bash_call 8000 1 # turn 2: the run is hung here when the daemon dies
    for i in 1 2 3; do bash_call 0 1; done
    for i in 1 2 3; do echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'; done
} >"$GOALD_LLM_SCRIPT"
make_project "$T/r"
goal_json "$T/r" "goal l" >"$T/g.json"
submit_goal "$T/g.json"

"$G" daemon 2>"$T/d1.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
exec_run() { RUN=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running' AND pid IS NOT NULL"); [ -n "$RUN" ]; }
wait_until 30 exec_run
lease1=$(sql "SELECT lease_until FROM runs WHERE id = '$RUN'")
timeout_s=$(sql "SELECT timeout_s FROM runs WHERE id = '$RUN'")
[ "$lease1" -gt "$(( $(date +%s%3N) + timeout_s * 1000 ))" ] || fail "the lease ($lease1) does not cover the timeout"; ok
# the second model call renews it
second_call() { [ "$(sql "SELECT count(*) FROM events WHERE run_id = '$RUN' AND type = 'llm.request'")" -ge 2 ]; }
wait_until 30 second_call
lease2=$(sql "SELECT lease_until FROM runs WHERE id = '$RUN'")
[ "$lease2" -ge "$((lease1 + 1000))" ] || fail "the lease was not renewed: $lease1 then $lease2"; ok

# the daemon dies while the job waits on its model; the job stops renewing
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
JOB=$(sql "SELECT pid FROM runs WHERE id = '$RUN'")
kill -0 "$JOB" || fail "the job should outlive its daemon"; ok
sql "UPDATE runs SET lease_until = $(( $(date +%s%3N) - 1000 )) WHERE id = '$RUN'"

run "$G" daemon --once
expect_rc 0 "restarted daemon --once"
expect_eq "$(sql "SELECT status || ': ' || failure_reason FROM runs WHERE id = '$RUN'")" \
    "aborted: its lease expired" "the run whose lease expired"
# gone (a zombie waiting for its new parent to reap it counts as gone)
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
wait_until 3 gone "$JOB"
ok
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$RUN' AND type = 'run.aborted'")" 1 "run.aborted"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$RUN' AND type = 'retry.scheduled'")" 1 "retry.scheduled"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'success'")" 1 "the item ran again"
br=$(sql "SELECT branch FROM goals")
expect_eq "$(git -C "$T/r" rev-list --count "main..$br")" 1 "one commit"
expect_eq "$(commits_per_item "$T/r" "$br" main)" 1 "commits per item"
done_tests
