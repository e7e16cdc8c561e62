#!/usr/bin/env bash
# The commit and branch artifacts are the record of what a goal
# produced; a write of one that fails fails the step instead of losing the
# record.  The failure is injected with an SQLite trigger that refuses the
# artifact row (as a full disk or a broken database would).  The step
# fails with class internal and the reason; after the trigger is gone, a
# retry records the artifact once and completes the goal.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1 GOALD_CONTROL_MAX_RETRIES=0
export GOALD_LLM_SCRIPT="$T/s.jsonl"

refuse() { # TYPE: the next artifact row of TYPE is refused
    sql "CREATE TRIGGER refuse_$1 BEFORE INSERT ON artifacts WHEN NEW.type = '$1'
         BEGIN SELECT RAISE(ABORT, 'injected: no $1 artifact'); END" >/dev/null
}

fail_with_refused() { # GOAL_FILE TYPE KIND: submit the goal (GOAL_ID), refuse its TYPE
    # artifact and run the daemon once: its KIND run fails with class internal
    submit_goal "$1"
    refuse "$2"
    run timeout 120 "$G" daemon --once
    expect_eq "$(sql "SELECT status || ' ' || error_class FROM runs WHERE goal_id = '$GOAL_ID' AND kind = '$3'")" \
        "failed internal" "the $3 run"
}

# --- the branch artifact of the push --------------------------------------------
script_generic 2 >"$GOALD_LLM_SCRIPT"
make_project "$T/r1"
git init -q --bare "$T/o1.git"
git -C "$T/r1" remote add origin "file://$T/o1.git"
goal_json "$T/r1" "push with its record" '{"push": true, "remote": "origin", "pull_request": false}' >"$T/g1.json"
fail_with_refused "$T/g1.json" branch publish
g1=$GOAL_ID
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$g1'")" blocked "goal after a lost branch record (escalated)"
case "$(sql "SELECT failure_reason FROM runs WHERE goal_id = '$g1' AND kind = 'publish'")" in
*"injected: no branch artifact"*) ok ;;
*) fail "the publish run's reason does not name the lost record" ;;
esac
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$g1' AND type IN ('goal.pushed', 'goal.completed')")" \
    0 "goal.pushed and goal.completed events"
# the trigger gone, a retry records the branch once and completes the goal
sql "DROP TRIGGER refuse_branch" >/dev/null
esc=$(sql "SELECT id FROM escalations WHERE goal_id = '$g1' AND status = 'open'")
[ -n "$esc" ] || fail "no publish escalation"
run "$G" resolve "$esc" --action retry
expect_rc 0 "resolve retry"
run timeout 120 "$G" daemon --once
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$g1'")" completed "goal after the retry"
expect_eq "$(sql "SELECT count(*) FROM artifacts WHERE goal_id = '$g1' AND type = 'branch'")" 1 \
    "branch artifacts"

# --- the commit artifact of an item ----------------------------------------------
script_generic 2 >"$GOALD_LLM_SCRIPT"
make_project "$T/r2"
goal_json "$T/r2" "commit with its record" >"$T/g2.json"
fail_with_refused "$T/g2.json" commit execute
g2=$GOAL_ID
expect_eq "$(sql "SELECT status FROM work_items WHERE goal_id = '$g2'")" escalated "item after a lost commit record"
expect_eq "$(sql "SELECT count(*) FROM artifacts WHERE goal_id = '$g2' AND type = 'commit'")" 0 \
    "commit artifacts"
expect_eq "$(sql "SELECT count(*) FROM goals WHERE id = '$g2' AND status = 'completed'")" 0 \
    "goal completed"
done_tests
