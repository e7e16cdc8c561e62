#!/usr/bin/env bash
# One daemon per database (a second one names the running pid);
# --log-file writes JSON lines and SIGUSR1 reopens it (logrotate's way);
# SIGTERM stops claiming, lets a running job finish within the grace, and
# kills and marks aborted one that outlasts it.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50
# the grace leaves a loaded machine room for the first job's 1.5 s answer,
# its gates and its review
export GOALD_DAEMON_SHUTDOWN_GRACE_S=8 GOALD_DAEMON_KILL_GRACE_S=1
# the goal's two items one after the other: one job runs at each SIGTERM
export GOALD_GOAL_MAX_PARALLEL_ITEMS=1
# one goal of two items: the first execute answer comes after 1.5 s (it
# finishes within the grace), the second after 60 s (it does not)
{
    script_generic 1 0 2 | grep -v '"stage":"execute"' | head -n 6
    script_generic 1 1500 1 | grep '"stage":"execute"' | head -n 1
    script_generic 1 60000 1 | grep '"stage":"execute"' | head -n 1
} >"$GOALD_LLM_SCRIPT"
make_project "$T/r"
goal_json "$T/r" "goal s" >"$T/g.json"

daemon_up() { [ "$("$G" status --json 2>/dev/null | jq -r .daemon.state)" = running ]; }
exec_running() { [ "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'running' AND pid IS NOT NULL")" = 1 ]; }

# the first daemon's grace is long: its job must finish within it, even
# on a machine loaded by a whole suite (the second daemon's is 8 s)
GOALD_DAEMON_SHUTDOWN_GRACE_S=60 "$G" daemon --log-file "$T/d.log" 2>"$T/d1.err" &
D1=$!
FAKE_PIDS="$FAKE_PIDS $D1"
wait_until 20 daemon_up

# --- a second daemon on the same database -------------------------------------
run "$G" daemon --once
expect_rc 1 "a second daemon"
expect_err "a daemon is already running for $GOALD_DB (pid $D1)"
kill -0 "$D1" || fail "the first daemon died"; ok
expect_eq "$("$G" status --json | jq -r .daemon.pid)" "$D1" "status names the first daemon"

# --- the log file: JSON lines; SIGUSR1 reopens it -------------------------------
mv "$T/d.log" "$T/d.log.1"
kill -USR1 "$D1"
submit_goal "$T/g.json"
wait_until 30 exec_running
# --- SIGTERM while a job runs that finishes within the grace ---------------------
run1=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running'")
kill -TERM "$D1"
wait "$D1"
expect_eq "$?" 0 "daemon exit after SIGTERM"
# the log files, read once the daemon stopped (reading them first let the
# job end on a loaded machine, and the next item's job start, before the
# SIGTERM this part is about)
[ -s "$T/d.log" ] || fail "no new log file after SIGUSR1"; ok
for f in "$T/d.log" "$T/d.log.1"; do
    while IFS= read -r line; do
        printf '%s' "$line" | jq -e 'has("time") and has("level") and (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T"))' >/dev/null ||
            fail "not a JSON log line with time and level in $f: $line"
    done <"$f"
    ok
done
expect_eq "$(jq -r 'select(.event == "daemon.started") | .mode' "$T/d.log.1")" service "daemon.started in the rotated file"
expect_eq "$(jq -r 'select(.event == "job.started") | .event' "$T/d.log.1" | wc -l)" 0 "job lines in the rotated file"
expect_eq "$(jq -r 'select(.event == "job.started" and .kind == "elaborate") | .goal' "$T/d.log")" "$GOAL_ID" \
    "job.started (with its goal) in the new file"
expect_eq "$(jq -r 'select(.event == "job.started" and .kind == "elaborate") | .attempt' "$T/d.log")" 1 "attempt in the log line"


[ "$(sql "SELECT status FROM runs WHERE id = '$run1'")" = success ] || {
    # say what the job was doing when the grace ran out
    sql "SELECT ts, type, substr(payload, 1, 200) FROM events WHERE run_id = '$run1' ORDER BY id" >&2
    tail -20 "$T/d1.err" >&2
}
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$run1'")" success "the job finished within the grace"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute'")" 1 "no claim after SIGTERM"
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE status = 'ready'")" 1 "the other item waits"
expect_eq "$(jq -r 'select(.event == "daemon.stopping" or .event == "daemon.stopped") | .event' "$T/d.log" | tr '\n' ' ')" \
    "daemon.stopping daemon.stopped " "stop lines"
expect_eq "$(sql "SELECT count(*) FROM daemon_heartbeat")" 0 "heartbeat cleared"

# --- SIGTERM while a job runs that outlasts the grace -----------------------------
"$G" daemon 2>"$T/d2.err" &
D2=$!
FAKE_PIDS="$FAKE_PIDS $D2"
wait_until 30 exec_running
run2=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running'")
jpid=$(sql "SELECT pid FROM runs WHERE id = '$run2'")
t0=$(date +%s%3N)
kill -TERM "$D2"
wait "$D2"
expect_eq "$?" 0 "daemon exit after SIGTERM with a long job"
t1=$(date +%s%3N)
# grace 8 s, then SIGTERM to the job's group (SIGKILL 1 s later)
[ $((t1 - t0)) -ge 7900 ] || fail "the daemon did not wait for the grace: $((t1 - t0)) ms"; ok
[ $((t1 - t0)) -lt 13000 ] || fail "the daemon took $((t1 - t0)) ms to stop"; ok
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$run2'")" aborted "the job killed after the grace"
kill -0 "$jpid" 2>/dev/null && fail "the job process $jpid is still alive"
ok
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'run.aborted' AND run_id = '$run2'")" 1 "run.aborted event"
done_tests
