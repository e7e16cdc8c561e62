#!/usr/bin/env bash
# A goal's publish unit gets its own retries.  The push fails
# (the remote is missing) on the first two publish runs; each failure is a
# retry (control.max_retries = 3), not an escalation, even though the
# goal's elaborate and plan units ran before it; once the remote exists the
# goal completes.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1 GOALD_CONTROL_MAX_RETRIES=3
export GOALD_LLM_SCRIPT="$T/s.jsonl"
script_generic 1 0 1 >"$GOALD_LLM_SCRIPT"
make_project "$T/r"
goal_json "$T/r" "goal p" '{"push": true, "remote": "origin", "pull_request": false}' >"$T/g.json"
submit_goal "$T/g.json"

step() {
    sleep 0.01 # past the backoff
    run "$G" claim --lane "$1" --json
    expect_rc 0 "claim --lane $1"
    RUN=$(jqo .run_id)
    KIND=$(jqo .kind)
    ATTEMPT=$(jqo .attempt)
    run "$G" job "$RUN"
    expect_rc 0 "job $KIND"
}
step plan; expect_eq "$KIND $ATTEMPT" "elaborate 1" "elaborate"
step plan; expect_eq "$KIND $ATTEMPT" "plan 1" "plan, a stage of its own"
step work; expect_eq "$KIND" execute "execute"
for n in 1 2; do
    step work
    expect_eq "$KIND $ATTEMPT" "publish $n" "publish run $n"
    expect_eq "$(sql "SELECT status || ' ' || error_class FROM runs WHERE id = '$RUN'")" "failed push" "publish run $n"
    expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$RUN' AND type = 'retry.scheduled'")" 1 \
        "publish failure $n is retried"
    expect_eq "$(sql "SELECT count(*) FROM escalations")" 0 "escalations after publish failure $n"
done
git init -q --bare "$T/r.git"
git -C "$T/r" remote add origin "file://$T/r.git"
step work
expect_eq "$KIND $ATTEMPT" "publish 3" "publish run 3"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"
br=$(sql "SELECT branch FROM goals")
expect_eq "$(git -C "$T/r.git" rev-parse "refs/heads/$br")" "$(git -C "$T/r" rev-parse "refs/heads/$br")" "pushed"
done_tests
