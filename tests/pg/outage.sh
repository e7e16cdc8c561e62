#!/usr/bin/env bash
# A job dies while the database is out of reach (PostgreSQL stopped): the
# daemon reaps it but cannot record the run's end.  It keeps the job's
# slot and goal and records the end once the server is back: the run is
# aborted with the job's own end ("the job process was killed by signal
# 9"), not found later as an orphan; no second work run starts on the node
# meanwhile (work_cap 1, from the runs' recorded intervals); both goals
# complete and nothing is left running.  The daemon says once that the
# database is out of reach and once that it is back, not every tick.  (pg.nodes_chaos once saw a node at
# 3 work runs with a cap of 2: ends lost in a server restart freed their
# slots while the runs stayed `running`.)
#
# A server of its own (tests/pg/own.sh): the stop disturbs no other test.
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"
. "$GOALD_SOURCE_DIR/tests/pg/own.sh"

on_finish() { [ -z "${PID_A:-}" ] || kill -KILL "$PID_A" 2>/dev/null || true; }
own_pg_start

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_TICK_MS=100 GOALD_DAEMON_PLAN_CAP=1 \
    GOALD_DAEMON_WORK_CAP=1 GOALD_NODE_DEAD_AFTER_S=3 GOALD_NODE_ID=A \
    GOALD_CONTROL_BACKOFF_BASE_MS=10 GOALD_CONTROL_BACKOFF_MAX_MS=100
script_generic 4 3000 1 >"$GOALD_LLM_SCRIPT"
for i in 1 2; do
    make_project "$T/p$i"
    goal_json "$T/p$i" "goal $i" >"$T/g$i.json"
    "$G" submit "$T/g$i.json" >/dev/null || fail "submit goal $i"
done
"$G" daemon --log-file "$T/A.log" 2>>"$T/A.err" &
PID_A=$!

# an item's job under way (its pid recorded): the server stops, the job dies
job_running() {
    [ -n "$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running' AND pid IS NOT NULL")" ]
}
wait_until 60 job_running
read -r RUN JOB <<<"$(sql "SELECT id, pid FROM runs WHERE kind = 'execute' AND status = 'running'" | tr '|' ' ')"
"$PGS" stop "$PGD" >/dev/null || fail "server stop"
# (on a loaded machine the job may have died of the stopped server first)
kill -KILL -- "-$JOB" 2>/dev/null || kill -KILL "$JOB" 2>/dev/null || ! kill -0 "$JOB" 2>/dev/null ||
    fail "kill the job $JOB"
# the daemon reaps it while nothing can be recorded
reaped() { grep -q "run ${RUN:0:8}: cannot record its end" "$T/A.err" "$T/A.log"; }
wait_until 20 reaped
nap 1
"$PGS" restart "$PGD" >/dev/null || fail "server restart"

all_done() { [ "$(sql "SELECT count(*) FROM goals WHERE status <> 'completed'" 2>/dev/null)" = 0 ]; }
wait_diag() { sql "SELECT title, status FROM goals; SELECT id, kind, status, failure_reason FROM runs"; tail -5 "$T/A.err"; }
wait_until 120 all_done
ok
kill -TERM "$PID_A"
wait "$PID_A" 2>/dev/null || true

why=$(sql "SELECT status || ': ' || coalesce(failure_reason, '') FROM runs WHERE id = '$RUN'")
case "$why" in
    "aborted: the job process "*) ;;
    *) fail "the dead job's run is recorded with its own end once the server is back, not found as an orphan: $why" ;;
esac
ok
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
peak=$(sql "SELECT coalesce(max(c), 0) FROM (SELECT (SELECT count(*) FROM runs s WHERE s.lane = 'work'
           AND s.created_at <= r.created_at AND r.created_at < s.ended_at) AS c
         FROM runs r WHERE r.lane = 'work') AS q1")
expect_eq "$peak" 1 "work runs at once on the node (work_cap 1)"
# the outage is said once, and its end, not every tick
expect_eq "$(grep -c 'database out of reach' "$T/A.err")" 1 "lines saying the database is out of reach"
grep -q 'database: reachable again after' "$T/A.err" || fail "the daemon says the database is back"
ok
done_tests
