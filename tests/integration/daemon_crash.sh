#!/usr/bin/env bash
# Crash recovery.
#   A. kill -9 of the daemon while three goals' items run (and one of its
#      jobs dies while it is down); a restarted daemon adopts the live
#      jobs, aborts the dead one and recovers it: every goal finishes, no
#      run stays running, no item is committed twice; the events show the
#      abort and the retry.
#   B. kill -9 of one job process under a running daemon: the daemon
#      notices at once (SIGCHLD, well before its 5 s tick) and recovers.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=50
running_exec() { [ "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'running' AND pid IS NOT NULL")" = "$1" ]; }

# --- A ------------------------------------------------------------------------
export GOALD_LLM_SCRIPT="$T/a.jsonl" GOALD_DAEMON_TICK_MS=100
script_generic 3 4000 2 >"$GOALD_LLM_SCRIPT"
for n in 1 2 3; do
    make_project "$T/r$n"
    goal_json "$T/r$n" "goal $n" >"$T/g$n.json"
    submit_goal "$T/g$n.json"
done
"$G" daemon 2>"$T/daemon1.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
wait_until 60 running_exec 3
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
# one job dies while no daemon watches it (its whole group): the youngest,
# whose answer is furthest off (on a loaded machine the oldest may finish
# between the check above and the kill)
victim=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running' ORDER BY started_at DESC LIMIT 1")
vpid=$(sql "SELECT pid FROM runs WHERE id = '$victim'")
kill -9 -- "-$vpid"
survivors=$(sql "SELECT group_concat(pid, ' ') FROM runs WHERE kind = 'execute' AND status = 'running' AND id <> '$victim'")
survivor_runs=$(sql "SELECT group_concat(id, ' ') FROM runs WHERE kind = 'execute' AND status = 'running' AND id <> '$victim'")
for p in $survivors; do kill -0 "$p" || fail "job $p should have outlived its daemon"; ok; done
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$victim'")" running "the dead job's run before the restart"

run "$G" daemon --once
expect_rc 0 "restarted daemon --once"
expect_eq "$(sql "SELECT count(*) FROM goals WHERE status = 'completed'")" 3 "completed goals"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE status = 'done'")" 6 "done items"
expect_eq "$(sql "SELECT status || ': ' || failure_reason FROM runs WHERE id = '$victim'")" \
    "aborted: its process is gone (found at daemon start)" "the dead job's run"
# the adopted jobs ended their own runs (a success, or a conflict with the
# goal's other item, which both write work.log: that item runs again)
for r in $survivor_runs; do
    case "$(sql "SELECT status FROM runs WHERE id = '$r'")" in
    success | failed) ok ;;
    *) fail "the adopted job's run $r: $(sql "SELECT status || ': ' || ifnull(failure_reason, '') FROM runs WHERE id = '$r'")" ;;
    esac
done
# besides the victim, only runs the killed daemon had claimed but not yet
# started (no process: items side by side keep the plan lane busy while
# three executes run) are aborted, and those too at the restart
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'aborted' AND id <> '$victim' AND
                  (pid IS NOT NULL OR failure_reason <> 'its process is gone (found at daemon start)')")" 0 \
    "aborted runs besides the victim: $(sql "SELECT kind || ' ' || ifnull(pid, '-') || ': ' || failure_reason FROM runs WHERE status = 'aborted'")"
expect_err "adopted its live job"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$victim' AND type = 'run.aborted'")" 1 "run.aborted event"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$victim' AND type = 'retry.scheduled'")" 1 "retry.scheduled event"
vitem=$(sql "SELECT item_id FROM runs WHERE id = '$victim'")
expect_eq "$(sql "SELECT count(*) FROM runs WHERE item_id = '$vitem' AND status = 'success' AND created_at > (SELECT created_at FROM runs WHERE id = '$victim')")" 1 \
    "the aborted item ran again"
for n in 1 2 3; do
    br=$(sql "SELECT branch FROM goals WHERE title = 'goal $n'")
    expect_eq "$(git -C "$T/r$n" rev-list --count "main..$br")" 2 "commits of goal $n"
    expect_eq "$(commits_per_item "$T/r$n" "$br" main)" 1 "commits per Work-Item-Id, goal $n"
done
run "$G" events --json
expect_rc 0 "events"
expect_out "run.aborted"

# --- B ------------------------------------------------------------------------
# a 5 s tick: a notice within 1 s cannot come from the tick
db_use b; export GOALD_LLM_SCRIPT="$T/b.jsonl" GOALD_DAEMON_TICK_MS=5000
script_generic 1 3000 1 >"$GOALD_LLM_SCRIPT"
make_project "$T/rb"
goal_json "$T/rb" "goal b" >"$T/gb.json"
submit_goal "$T/gb.json"
"$G" daemon 2>"$T/daemon2.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
wait_until 30 running_exec 1
run_b=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'running'")
t0=$(date +%s%3N)
kill -9 "$(sql "SELECT pid FROM runs WHERE id = '$run_b'")"
aborted() { [ "$(sql "SELECT status FROM runs WHERE id = '$run_b'")" = aborted ]; }
wait_until 10 aborted
t1=$(sql "SELECT ts FROM events WHERE run_id = '$run_b' AND type = 'run.aborted'")
[ $((t1 - t0)) -lt 1000 ] || fail "the daemon took $((t1 - t0)) ms to notice a dead job (tick 5000 ms)"; ok
expect_eq "$(sql "SELECT failure_reason FROM runs WHERE id = '$run_b'")" "the job process was killed by signal 9" "reason"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$run_b' AND type = 'retry.scheduled'")" 1 "retry.scheduled"
done_b() { [ "$(sql "SELECT status FROM goals WHERE title = 'goal b'")" = completed ]; }
wait_diag() { sql "SELECT kind || ' ' || status || ' ' || ifnull(failure_reason, '') FROM runs ORDER BY created_at"; sql "SELECT status FROM goals"; }
# a deadline for a loaded machine (5 s ticks, a 3 s model answer, backoff)
wait_until 90 done_b
kill -TERM "$DPID"
wait "$DPID"
expect_eq "$?" 0 "daemon exit after SIGTERM"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running (B)"

# --- C ------------------------------------------------------------------------
# A job killed after it wrote its run's end and before the run's recovery
# moved the item (GOALD_FAULT=job.after_run_end: as a kill -9 during a Plan B
# call).  The item must not stay in_progress with nothing running it: the
# daemon recovers it when it reaps the job, and the goal completes.
db_use c; export GOALD_LLM_SCRIPT="$T/c.jsonl" GOALD_DAEMON_TICK_MS=100 GOALD_LLM_RETRY_MAX=0
script_outage >"$GOALD_LLM_SCRIPT"
make_project "$T/rc"
goal_json "$T/rc" "goal c" >"$T/gc.json"
submit_goal "$T/gc.json"
GOALD_FAULT=job.after_run_end run "$G" daemon --once
expect_rc 0 "daemon --once with a job killed after its run's end"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "goal c"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'failed'")" 1 "failed execute runs"
failed=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'failed'")
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$failed' AND type = 'retry.scheduled'")" 1 \
    "the killed job's item recovered once"
expect_err "recovered=item"
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE status <> 'done'")" 0 "items not done"

# --- D ------------------------------------------------------------------------
# The same death while no daemon watches (the job run by hand, as the daemon
# would run it): the next daemon finds the item held by a dead job at its
# start and recovers it.
db_use d; export GOALD_LLM_SCRIPT="$T/d.jsonl"
script_outage >"$GOALD_LLM_SCRIPT"
make_project "$T/rd"
goal_json "$T/rd" "goal d" >"$T/gd.json"
submit_goal "$T/gd.json"
for lane in plan plan work; do
    run "$G" claim --lane "$lane"
    expect_rc 0 "claim --lane $lane"
    RUN=$OUT
    GOALD_FAULT=job.after_run_end "$G" job "$RUN" >"$T/job.out" 2>"$T/job.err" || true
done
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$RUN'")" failed "the killed job's run"
expect_eq "$(sql "SELECT status FROM work_items")" in_progress "its item, held"
run "$G" daemon --once
expect_rc 0 "daemon --once after a job died between its run's end and its recovery"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "goal d"
expect_err "left held by a dead job: recovered"
done_tests
