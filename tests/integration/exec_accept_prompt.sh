#!/usr/bin/env bash
# A human's acceptance reaches the model: after `resolve --action
# accept_test_changes --input CASE` on an item refused for a loosened test,
# the item's next execute prompt says which test cases the human accepted
# (the action and its input), not only an earlier answer.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"
need_pytest

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
HEAD='import os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import greet
'
R="$T/repo"
make_repo "$R"
printf 'def greet(name): return "Hello " + name\n' >"$R/greet.py"
mkdir -p "$R/tests"
printf '%s%s\n' "$HEAD" 'def test_greet(): assert greet.greet("Bob") == "Hello Bob"' >"$R/tests/test_greet.py"
git -C "$R" add -A
git -C "$R" commit -q -m "greet"
NEW='def greet(name): return "Hello " + name + "!"
'
LOOSE="$(write tests/test_greet.py "${HEAD}def test_greet(): assert greet.greet(\"Bob\").startswith(\"Hello Bob\")")"
CHANGE="$(write greet.py "$NEW"), $LOOSE, $(complete done)"

# the first model: the loosened test is refused; Plan B and the escalate
# stage get no answer (the fake's script ends), so goald's own analysis
# opens the escalation
{
    printf '{"content": %s}\n{"content": %s}\n' "$ELAB" "$(plan1 "Greet with !")"
    printf '{"tool_calls": [%s]}\n' "$CHANGE"
} >"$T/s1.jsonl"
start_fake_llm one openai "$T/s1.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh accept "$R" ', "verification": [{"name": "pytest", "type": "test", "command": "python3 -m pytest -q -p no:cacheprovider tests", "must_pass": true}], "success_criteria": ["greet says Hello NAME!"]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "the loosened test is refused"
run "$G" daemon --once
esc=$(sql "SELECT id FROM escalations WHERE status = 'open' AND type = 'tests_changed'")
[ -n "$esc" ] || fail "no tests_changed escalation: $(sql "SELECT type, status FROM escalations")"
ok
run "$G" resolve "$esc" --action accept_test_changes --input "tests/test_greet.py::test_greet"
expect_rc 0 "accept the named change"

# the next run, with a second model server: its prompt names the accepted case
{
    printf '{"tool_calls": [%s]}\n' "$CHANGE"
    printf '{"content": %s}\n' "$REVIEW"
} >"$T/s2.jsonl"
start_fake_llm two openai "$T/s2.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
step work
expect_eq "$(jqo .status)" success "the accepted change lands"
p=$(jq -r 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" | head -c 100000)
case "$p" in *"What a human decided about this item so far"*"- accept_test_changes (to the escalation \""*"): the human accepted the change of these test cases"*": tests/test_greet.py::test_greet"*) ok ;;
    *) fail "the prompt does not say which test changes the human accepted: $p" ;; esac

done_tests
