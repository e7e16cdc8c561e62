#!/usr/bin/env bash
# Recurring goals, with the real daemon (`daemon --once`)
# and the script provider.
#   A. `goals` shows a template as "scheduled" with its schedule and next
#      fire time (human and --json); --status scheduled / queued tell them
#      apart; `goal show` too;
#   B. an instance whose elaboration finds nothing to do ends `completed`
#      with outcome nothing_to_do and its reason, without a branch, work
#      items or escalation; `goals` shows it as an instance of its template;
#   C. the next instances work on the template's one branch,
#      goald/<slug>-<template id8>: two runs, one branch, two commits;
#   D. "schedule_branch": "per_run" gives each instance its own branch;
#      intake refuses a bad value and one without a schedule.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50 GOALD_CONTROL_MAX_RETRIES=0
export GOALD_LLM_SCRIPT="$T/s.jsonl"

elab_nothing='{"stage":"elaborate","content":{"nothing_to_do":true,"reason":"every dependency is current","components":[],"implicit_requirements":[],"success_criteria":[],"allowed_actions":[],"verification":[]}}'
{
    echo "$elab_nothing"
    script_generic 4 0 1
} >"$GOALD_LLM_SCRIPT"

make_project "$T/r"
goal_json "$T/r" "Nightly dependency check" | jq '. + {schedule: "0 9 * * *"}' >"$T/tmpl.json"
submit_goal "$T/tmpl.json"
TMPL=$GOAL_ID
ID8=${TMPL:0:8}

# --- A: the template in `goals` and `goal show` ---------------------------------------
expected_next=$("$G" cron next "0 9 * * *" --count 1)
run "$G" goals
expect_rc 0 "goals"
expect_eq "$(printf '%s\n' "$OUT" | grep "^$ID8" | awk '{print $2}')" scheduled "the template's status in goals"
expect_out "template: 0 9 * * *, next $expected_next" "goals: the template's schedule and next fire"
while IFS= read -r line; do
    [ "${#line}" -le 80 ] || fail "goals: line longer than 80 columns: [$line]"
done <<<"$OUT"
ok
run "$G" goals --json
expect_rc 0 "goals --json"
expect_eq "$(jqo '.[0].status')" scheduled "goals --json: status of a template"
expect_eq "$(jqo '.[0].template')" true "goals --json: template"
expect_eq "$(jqo '.[0].schedule')" "0 9 * * *" "goals --json: schedule"
expect_eq "$(jqo '.[0].next_fire_at')" "$expected_next" "goals --json: next_fire_at"
run "$G" goals --status scheduled --json
expect_rc 0 "goals --status scheduled"
expect_eq "$(jqo 'length')" 1 "goals --status scheduled lists the template"
run "$G" goals --status queued --json
expect_rc 0 "goals --status queued"
expect_eq "$(jqo 'length')" 0 "goals --status queued leaves the template out"
run "$G" goal show "$TMPL"
expect_rc 0 "goal show"
expect_out "status            scheduled"
expect_out "next fire         $expected_next"

# the first daemon makes the trigger (the time it shows stays the same)
run "$G" daemon --once
expect_rc 0 "daemon --once with only a template"
expect_eq "$(sql "SELECT count(*) FROM triggers WHERE goal_id = '$TMPL'")" 1 "the template's trigger"
run "$G" goals --json
expect_eq "$(jqo '.[0].next_fire_at')" "$expected_next" "next_fire_at from the trigger"

fire_now() { sql "UPDATE triggers SET next_fire_at = $(($(date +%s%3N) - 1000)) WHERE goal_id = '$1'"; }

# --- B: nothing to do -------------------------------------------------------------------
fire_now "$TMPL"
run "$G" daemon --once
expect_rc 0 "daemon --once (a run with nothing to do)"
I1=$(sql "SELECT id FROM goals WHERE parent_id = '$TMPL' ORDER BY created_at LIMIT 1")
[ -n "$I1" ] || fail "no instance was made"; ok
expect_eq "$(sql "SELECT status || ' ' || ifnull(outcome, '-') || ' ' || ifnull(branch, '-') FROM goals WHERE id = '$I1'")" \
    "completed nothing_to_do -" "the instance with nothing to do"
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE goal_id = '$I1'")" 0 "no work items"
expect_eq "$(sql "SELECT count(*) FROM escalations")" 0 "no escalation"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE goal_id = '$I1'")" 1 "one run (elaboration) only"
expect_eq "$(git -C "$T/r" branch --list 'goald/*' | wc -l)" 0 "no branch in the repository"
run "$G" report "$I1" --json
expect_rc 0 "report --json"
expect_eq "$(jqo '.goal.status + " " + .goal.outcome + " / " + .goal.outcome_reason')" \
    "completed nothing_to_do / every dependency is current" "report: outcome and reason"
expect_eq "$(jqo '.goal.branch')" "" "report: no branch"
expect_eq "$(jqo '[.artifacts[] | select(.type == "branch" or .type == "commit")] | length')" 0 "report: no branch or commit artifact"
run "$G" report "$I1"
expect_rc 0 "report"
expect_out "outcome  nothing to do: every dependency is current"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$I1' AND type = 'goal.nothing_to_do'")" 1 "goal.nothing_to_do event"
run "$G" goals
expect_out "instance of $ID8, nothing to do: every dependency is current" "goals: the instance names its template"

# --- C: one branch per template ---------------------------------------------------------
BR="goald/nightly-dependency-check-$ID8"
expect_eq "$(sql "SELECT branch FROM goals WHERE id = '$TMPL'")" "$BR" "the template's branch name"
for n in 2 3; do
    fire_now "$TMPL"
    run "$G" daemon --once
    expect_rc 0 "daemon --once (instance $n)"
    expect_eq "$(sql "SELECT count(*) FROM goals WHERE parent_id = '$TMPL' AND status = 'completed'")" "$n" "instances completed"
done
expect_eq "$(sql "SELECT count(DISTINCT branch) || ' ' || min(branch) FROM goals WHERE parent_id = '$TMPL' AND outcome IS NULL")" \
    "1 $BR" "both working instances on the template's branch"
expect_eq "$(git -C "$T/r" branch --list 'goald/*' | wc -l)" 1 "one goald branch in the repository"
expect_eq "$(git -C "$T/r" rev-list --count "main..$BR")" 2 "one commit per working instance on it"
expect_eq "$(git -C "$T/r" log --format='%(trailers:key=Goal-Id,valueonly)' "main..$BR" | grep . | sort -u | wc -l)" 2 \
    "the commits belong to two instances"
expect_eq "$(sql "SELECT count(*) FROM escalations")" 0 "no escalation"
run "$G" goals --json
expect_eq "$(jqo "[.[] | select(.parent_id == \"$TMPL\")] | length")" 3 "goals --json: instances point to their template"
expect_eq "$(jqo "[.[] | select(.parent_id == \"$TMPL\") | .template] | unique | tostring")" '[false]' "instances are not templates"

# --- D: a branch per run, and intake's checks --------------------------------------------
goal_json "$T/r" "Weekly tidy" | jq '. + {schedule: "@weekly", schedule_branch: "per_run"}' >"$T/per_run.json"
submit_goal "$T/per_run.json"
PR=$GOAL_ID
run "$G" daemon --once
fire_now "$PR"
run "$G" daemon --once
expect_rc 0 "daemon --once (per_run)"
I=$(sql "SELECT id FROM goals WHERE parent_id = '$PR'")
expect_eq "$(sql "SELECT status || ' ' || branch FROM goals WHERE id = '$I'")" "completed goald/weekly-tidy-${I:0:8}" \
    "per_run: the instance's own branch"

goal_json "$T/r" "bad" | jq '. + {schedule: "@daily", schedule_branch: "sometimes"}' >"$T/bad1.json"
run "$G" submit "$T/bad1.json"
expect_rc 2 "submit with a bad schedule_branch"
expect_err "bad1.json: schedule_branch: expected \"per_template\" or \"per_run\", got \"sometimes\""
goal_json "$T/r" "bad" | jq '. + {schedule_branch: "per_run"}' >"$T/bad2.json"
run "$G" submit "$T/bad2.json"
expect_rc 2 "submit with schedule_branch and no schedule"
expect_err "bad2.json: schedule_branch: needs \"schedule\""
# a bad schedule_branch does not end the pass: the fields after it are checked too
goal_json "$T/r" "bad" | jq '. + {schedule_branch: "sometimes", publish: {push: "yes"}}' >"$T/bad3.json"
run "$G" submit "$T/bad3.json"
expect_rc 2 "submit with a bad schedule_branch and a bad publish"
expect_err "bad3.json: schedule_branch: expected"
expect_err "bad3.json: publish.push:"

done_tests
