#!/usr/bin/env bash
# A changed test is judged by what it pins, and new tests prove themselves
# (fail before, pass after), on a real pytest project: greet() says
# "Hello NAME" and the goal asks for "Hello NAME!".
#   1. the honest change: the product adds "!" and the existing test's
#      expectation is updated (it fails with the baseline's product and
#      passes with the item's: it pins the new behaviour): accepted, listed
#      as an accepted test change; a new regression test that fails before
#      and passes after is fail_to_pass, a new test that passes before too
#      is not_exercising;
#   2. the same product change with the test loosened so that it passes on
#      the baseline's product as well: tests weakened;
#   3. a failing target test rewritten to expect the old behaviour, the
#      product untouched: not accepted (the original test judges).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
need_pytest

GATE=', "verification": [{"name": "pytest", "type": "test", "command": "python3 -m pytest -q -p no:cacheprovider tests", "must_pass": true}], "success_criteria": ["greet says Hello NAME!"], "publish": {"push": true, "remote": "origin", "pull_request": true}'
HEAD='import os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import greet
'

forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets

# goal NAME TESTS TOOL_CALL...: a fresh project whose tests/test_greet.py
# holds TESTS (pushed to a bare origin, with a pull request on the fake
# forge), and a goal whose one item makes these calls
goal() {
    local name=$1 tests=$2 calls
    shift 2
    R="$T/$name"
    make_repo "$R"
    printf 'def greet(name): return "Hello " + name\ndef half(a): return a / 3\n' >"$R/greet.py"
    mkdir -p "$R/tests"
    printf '%s%s\n' "$HEAD" "$tests" >"$R/tests/test_greet.py"
    git -C "$R" add -A; git -C "$R" commit -q -m "greet without !"
    git init -q --bare "$R.git"
    git -C "$R" remote add origin "file://$R.git"
    calls=$(printf '%s,' "$@")
    {
        echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
        echo "{\"stage\": \"plan\", \"content\": $(plan1 "Greet with !")}"
        echo "{\"stage\": \"execute\", \"tool_calls\": [${calls}$(complete "done")]}"
        echo "{\"stage\": \"review\", \"content\": $REVIEW}"
    } >"$T/$name.jsonl"
    export GOALD_LLM_SCRIPT="$T/$name.jsonl"
    submit_fresh "$name" "$R" "$GATE"
    step plan; step plan; step work
}
gates() { sql "SELECT data FROM decisions WHERE kind = 'verification'" | jq -r "$1"; }
NEW_GREET='def greet(name): return "Hello " + name + "!"
def half(a): return a / 3
'

# ===== 1. the honest behaviour change ======================================
goal honest 'def test_greet(): assert greet.greet("Bob") == "Hello Bob"
def test_greet_other(): assert greet.greet("Al").startswith("Hello")' \
    "$(write greet.py "$NEW_GREET")" \
    "$(write tests/test_greet.py "${HEAD}def test_greet(): assert greet.greet(\"Bob\") == \"Hello Bob!\"
def test_greet_other(): assert greet.greet(\"Al\").startswith(\"Hello\")")" \
    "$(write tests/test_more.py "${HEAD}def test_bang(): assert greet.greet(\"x\").endswith(\"!\")
def test_half(): assert greet.half(9) == 3")"
expect_eq "$(jqo .status)" success "an updated expectation that pins the new behaviour"
expect_eq "$(gates '.gates[0].accepted_test_changes | join(",")')" "tests/test_greet.py::test_greet" "accepted test change"
expect_eq "$(gates '.gates[0].fail_to_pass | join(",")')" "tests/test_more.py::test_bang" "fail before, pass after"
expect_eq "$(gates '.gates[0].not_exercising | join(",")')" "tests/test_more.py::test_half" "passes before too"
expect_eq "$(gates '[.restored_inputs_gates[0].pinned_only, .tests_weakened] | @tsv')" "$(printf 'true\tfalse')" \
    "the product-only run failed only by the pinned test"
expect_eq "$(sql "SELECT ifnull(verified, 'NULL') FROM work_items")" 1 "verified"
# published: the pull request's body names the changed test at its top
step work
expect_eq "$(jqo .status)" success "publish"
body=$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/widgets/pulls")][0].json.body' "$FORGE_LOG")
case "$body" in "## Goal"*"## Existing tests changed"*"tests/test_greet.py::test_greet"*"## Success criteria and evidence"*) ok ;;
    *) fail "the pull request's body does not name the changed test first: $body" ;; esac
# ... with its old and new lines together, in a fence no backtick of it can close
case "$body" in *'  ````diff'*'-def test_greet(): assert greet.greet("Bob") == "Hello Bob"'*'+def test_greet(): assert greet.greet("Bob") == "Hello Bob!"'*'  ````'*"## Success criteria"*) ok ;;
    *) fail "the changed test's old and new version are not shown: $body" ;; esac

# ===== 2. the test loosened to pass on the old product too =================
goal loosened 'def test_greet(): assert greet.greet("Bob") == "Hello Bob"' \
    "$(write greet.py "$NEW_GREET")" \
    "$(write tests/test_greet.py "${HEAD}def test_greet(): assert greet.greet(\"Bob\").startswith(\"Hello Bob\")")"
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a loosened test is weakened"
case "$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" in
    "tests weakened: tests/test_greet.py"*) ok ;; *) fail "failure reason: $(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" ;; esac
expect_eq "$(gates '.gates[0].accepted_test_changes | length')" 0 "nothing accepted"

# ===== 2b. the same change, accepted by a human ============================
# The loosened test refused, recovery exhausted: the escalation offers
# accept_test_changes; the human names the case, the check waives exactly
# it, and the item's next run is done with the waiver in its evidence.
LOOSE="$(write tests/test_greet.py "${HEAD}def test_greet(): assert greet.greet(\"Bob\").startswith(\"Hello Bob\")")"
goal waived 'def test_greet(): assert greet.greet("Bob") == "Hello Bob"' \
    "$(write greet.py "$NEW_GREET")" "$LOOSE"
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "refused before the human"
run "$G" daemon --once
expect_rc 3 "the goal waits on a human"
esc=$(sql "SELECT id FROM escalations WHERE status = 'open'")
expect_eq "$(sql "SELECT type || ' ' || json_extract(packet, '\$.actions[0]') || ' ' || json_extract(packet, '\$.actions[1]') FROM escalations WHERE id = '$esc'")" \
    "tests_changed accept_best_attempt accept_test_changes" "the escalation offers to accept the change"
run "$G" resolve "$esc" --action accept_test_changes
expect_rc 2 "the cases must be named"
run "$G" resolve "$esc" --action accept_test_changes --input "tests/test_greet.py"
expect_rc 2 "a file is not a case"
expect_err '"tests/test_greet.py" is not a test case the refusal named (a file is not a case); it named: tests/test_greet.py::test_greet'
run "$G" resolve "$esc" --action accept_test_changes --input "tests/test_greet.py::test_greet"
expect_rc 0 "accept the named change"
echo "{\"stage\": \"execute\", \"tool_calls\": [$(write greet.py "$NEW_GREET"),$LOOSE,$(complete "done")]}" >>"$GOALD_LLM_SCRIPT"
echo "{\"stage\": \"review\", \"content\": $REVIEW}" >>"$GOALD_LLM_SCRIPT"
step work
expect_eq "$(jqo .status)" success "the accepted change lands"
expect_eq "$(sql "SELECT data FROM decisions WHERE kind = 'verification' ORDER BY id DESC LIMIT 1" | jq -r '.accepted_by_human | join(",")')" \
    "tests/test_greet.py::test_greet" "the waiver is in the verification record"

# ===== 2c. the best attempt, accepted by a human ==========================
# The packet names the best attempt (gates pass, rejected because ...);
# accept_best_attempt applies its saved patch again, verifies it with the
# refusal waived and commits it: no model call (the script has no line
# left for execute).
goal best 'def test_greet(): assert greet.greet("Bob") == "Hello Bob"' \
    "$(write greet.py "$NEW_GREET")" "$LOOSE"
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "refused before the human"
BEST_RUN=$RUN
run "$G" daemon --once
expect_rc 3 "the goal waits on a human"
esc=$(sql "SELECT id FROM escalations WHERE status = 'open'")
expect_eq "$(sql "SELECT json_extract(packet, '\$.best_attempt.run_id') || ' ' || json_extract(packet, '\$.best_attempt.gates') FROM escalations WHERE id = '$esc'")" \
    "$BEST_RUN pass" "the packet names the best attempt"
case "$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations WHERE id = '$esc'")" in
    *"Best attempt: run ${BEST_RUN:0:8}, gates pass, rejected because tests weakened"*) ok ;;
    *) fail "the question does not name the best attempt: $(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations WHERE id = '$esc'")" ;; esac
run "$G" resolve "$esc" --action accept_best_attempt
expect_rc 0 "accept the best attempt"
echo "{\"stage\": \"review\", \"content\": $REVIEW}" >>"$GOALD_LLM_SCRIPT"
# a job killed after applying it, before its verification ended: the
# acceptance is still owed, and the next run applies it again
run "$G" claim --lane work --json; expect_rc 0 "claim the item"
RUN=$(jqo .run_id)
set +e; GOALD_FAULT=execute.best_attempt_applied "$G" job "$RUN" >/dev/null 2>&1; jrc=$?; set -e
expect_eq "$jrc" 137 "the job died by SIGKILL after applying the best attempt"
expect_eq "$(sql "SELECT count(*) FROM decisions WHERE kind = 'best_attempt_applied'")" 0 "not recorded as applied"
run "$G" daemon --once
expect_eq "$(sql "SELECT status FROM runs WHERE kind = 'execute' ORDER BY created_at DESC LIMIT 1")" success \
    "the best attempt lands without a model call, after the kill"
expect_eq "$(sql "SELECT note FROM decisions WHERE kind = 'verification' ORDER BY id DESC LIMIT 1")" \
    "tests weakened, accepted by a human" "the verification says who accepted it"
expect_eq "$(sql "SELECT status FROM work_items")" done "done"
expect_eq "$(git -C "$R" show "$(sql "SELECT commit_sha FROM work_items")":tests/test_greet.py | tail -n1)" \
    'def test_greet(): assert greet.greet("Bob").startswith("Hello Bob")' "the commit holds the best attempt"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'item.best_attempt_applied'")" 1 "applied once"

# ===== 3. a failing target rewritten to expect the old behaviour ===========
goal target 'def test_greet(): assert greet.greet("Bob") == "Hello Bob!"' \
    "$(write tests/test_greet.py "${HEAD}def test_greet(): assert greet.greet(\"Bob\") == \"Hello Bob\"")"
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a rewritten target is not accepted"
case "$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" in
    "tests weakened: tests/test_greet.py"*"the product does not fix what the goal is about"*) ok ;;
    *) fail "failure reason: $(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" ;; esac
done_tests
