#!/usr/bin/env bash
# Partial means partial, and nothing done publishes nothing:
#   A. two items, the second skipped by a human: the goal completes with
#      partial true (stored, in the goal.completed event, in the report),
#      and its progress counts the skipped item apart: 1 of 2 done, never
#      100 %;
#   B. one item, skipped: nothing was done, so the goal is cancelled with
#      the reason, no branch is pushed and no artifact recorded;
#   C. one item whose question a human answers with complete_partial: the
#      same (the item is cancelled, nothing done).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1 GOALD_CONTROL_MAX_RETRIES=0
ELAB='{"stage":"elaborate","content":{"components":["work.log"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["ls","read","edit","bash","ask_human"],"verification":[]}}'
WORK='{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"date >> work.log"}},{"name":"complete","arguments":{"summary":"appended a line"}}]}'
AUTH='{"stage":"execute","error":"auth","message":"a scripted refused key"}'
ASK='{"stage":"execute","tool_calls":[{"name":"ask_human","arguments":{"question":"which log?"}}]}'
REVIEW='{"stage":"review","content":{"verdict":"pass","findings":[]}}'
plan() { # KEYS...: one item per key, each after the one before
    local wi="[" prev="" k
    for k in "$@"; do
        wi="$wi$( [ "$wi" = "[" ] || echo ,){\"key\":\"$k\",\"title\":\"item $k\",\"description\":\"append a line\",\"type\":\"code\",\"effort\":\"S\",\"critical\":false,\"depends_on\":[$( [ -n "$prev" ] && echo "\"$prev\"")]}"
        prev=$k
    done
    echo "{\"stage\":\"plan\",\"content\":{\"work_items\":$wi]}}"
}
# goal NAME SCRIPT_LINES...: a fresh database and project (pushed to its
# own bare origin), the goal submitted (GOAL_ID), daemon --once run
goal() {
    local name=$1
    shift
    db_use "$name"
    export GOALD_LLM_SCRIPT="$T/$name.jsonl"
    printf '%s\n' "$@" >"$GOALD_LLM_SCRIPT"
    make_project "$T/$name"
    git init -q --bare "$T/$name.git"
    git -C "$T/$name" remote add origin "file://$T/$name.git"
    goal_json "$T/$name" "goal $name" '{"push": true, "remote": "origin", "pull_request": false}' >"$T/$name.json"
    submit_goal "$T/$name.json"
    run "$G" daemon --once
}
resolve() { # ACTION: the open escalation resolved, the daemon run again
    local esc
    esc=$(sql "SELECT id FROM escalations WHERE status = 'open'")
    [ -n "$esc" ] || fail "no open escalation"
    run "$G" resolve "$esc" --action "$1"; expect_rc 0 "resolve $1"
    run "$G" daemon --once
}

# ===== A. one item done, one skipped: partial ==============================
goal partial "$ELAB" "$(plan wi-1 wi-2)" "$WORK" "$REVIEW" "$AUTH"
expect_rc 3 "the second item waits on a human"
resolve skip
expect_rc 0 "daemon --once after skip"
expect_eq "$(sql "SELECT status || ' ' || partial FROM goals")" "completed 1" "completed, partial"
expect_eq "$(sql "SELECT json_extract(payload, '\$.partial') || ' ' || json_extract(payload, '\$.items_skipped') FROM events WHERE type = 'goal.completed'")" \
    "1 1" "goal.completed says partial, one item skipped"
run "$G" report "$GOAL_ID" --json
expect_eq "$(jqo '[.goal.partial, .progress.items_done, .progress.items_skipped, .progress.percent] | @tsv')" \
    "$(printf 'true\t1\t1\t50')" "the report: partial, the skipped item apart, not 100 %"
run "$G" report "$GOAL_ID"
case "$OUT" in *"100.0%"*) fail "a partial goal shown at 100 %: $OUT" ;; *) ok ;; esac

# ===== B. the only item skipped: nothing done, nothing published ===========
goal skipped "$ELAB" "$(plan wi-1)" "$AUTH"
expect_rc 3 "the item waits on a human"
resolve skip
expect_eq "$(sql "SELECT status FROM goals")" cancelled "nothing done: cancelled"
case "$(sql "SELECT json_extract(payload, '\$.reason') FROM events WHERE type = 'goal.cancelled'")" in
    "nothing was done: 1 item skipped"*) ok ;; *) fail "the reason: $(sql "SELECT payload FROM events WHERE type = 'goal.cancelled'")" ;; esac
expect_eq "$(git -C "$T/skipped.git" for-each-ref | wc -l)" 0 "no branch pushed"
expect_eq "$(sql "SELECT count(*) FROM artifacts")" 0 "no artifact"

# ===== C. complete_partial with nothing done ===============================
goal asked "$ELAB" "$(plan wi-1)" "$ASK"
expect_rc 3 "the question waits on a human"
resolve complete_partial
expect_eq "$(sql "SELECT status FROM goals")" cancelled "complete_partial with nothing done: cancelled"
expect_eq "$(sql "SELECT status FROM work_items")" cancelled "the item"
expect_eq "$(git -C "$T/asked.git" for-each-ref | wc -l)" 0 "no branch pushed"
expect_eq "$(sql "SELECT count(*) FROM artifacts WHERE type IN ('branch', 'pull_request')")" 0 "no branch artifact"
done_tests
