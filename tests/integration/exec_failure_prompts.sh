#!/usr/bin/env bash
# A failing pytest gate told to the next attempt and to the escalation,
# and a human's answer that does not help:
#   - the retry's prompt holds pytest's FAILURES entry (its "E" assertion
#     line) and short summary, not its warnings summary, each once, and
#     says the run was on the item's tree;
#   - the agent's ask_human question reaches the escalate stage;
#   - after the human's answer (resolve retry with input), a run failing
#     the same way as before the answer escalates at once (no retry), and
#     the escalate stage gets the failure digested, not the raw output.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"
need_pytest

export GOALD_CONTROL_BACKOFF_BASE_MS=1

R="$T/repo"
calc_repo "$R" 'def mul(a, b):\n    return a * b\n' 'import warnings


def test_mul():
    assert calc.mul(2, 3) == 6


def test_noisy():
    for i in range(40):
        warnings.warn("deprecated helper number %d is going away soon" % i, DeprecationWarning)
' "calc"

BAD=$(write calc.py "$(printf 'def mul(a, b):\n    return a + b\n')")
ESCALATE='{"root_cause": "mul adds", "options": [{"option": "retry", "description": "d", "pros": "p", "cons": "c", "effort": "small"}], "minimal_question": "Q?"}'
{
    printf '{"content": %s}\n{"content": %s}\n' "$ELAB" "$(plan1 "Speed up mul")"
    # attempt 1: mul adds; the gate fails
    printf '{"tool_calls": [%s]}\n' "$BAD"
    printf '{"tool_calls": [%s]}\n' "$(complete "mul is faster")"
    # attempt 2: the agent asks
    printf '{"tool_calls": [{"name": "ask_human", "arguments": {"question": "QUESTION-7: may mul use addition?"}}]}\n'
    printf '{"content": %s}\n' "$ESCALATE"
    # attempt 3, after the answer: the same failure
    printf '{"tool_calls": [%s]}\n' "$BAD"
    printf '{"tool_calls": [%s]}\n' "$(complete "mul is faster")"
    printf '{"content": %s}\n' "$ESCALATE"
} >"$T/script.jsonl"
start_fake_llm llm openai "$T/script.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh failp "$R" ', "verification": [{"name": "pytest", "type": "test", "command": "python3 -m pytest -q -p no:cacheprovider tests", "must_pass": true}]'
step plan; step plan
ITEM=$(sql "SELECT id FROM work_items")

step work
expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/gate/retry "attempt 1"
case "$(sql "SELECT output_tail FROM gate_results WHERE item_id='$ITEM' AND passed=0")" in
    *"warnings summary"*) ok ;; *) fail "the gate's output has no warnings summary: the test proves nothing" ;; esac

# attempt 2: the retry's prompt
step work
jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" >"$T/prompts"
retry=$(sed -n 3p "$T/prompts" | jq -r .)
case "$retry" in *"Output of gate pytest (exit 1), run on the item's tree"*) ok ;; *) fail "the output's source: $retry" ;; esac
expect_eq "$(printf '%s\n' "$retry" | grep -c '^E  *assert 5 == 6')" 1 "the assertion line, once"
expect_eq "$(printf '%s\n' "$retry" | grep -c '^FAILED tests/test_calc.py::test_mul')" 1 "the short summary, once"
expect_eq "$(printf '%s\n' "$retry" | grep -c '_ test_mul _')" 1 "the failure's entry"
expect_eq "$(printf '%s\n' "$retry" | grep -c 'deprecated helper number')" 0 "no warnings"
expect_eq "$(printf '%s\n' "$retry" | grep -c '1 failed, 1 passed')" 1 "the closing line"

# the agent asked: the escalate stage gets its question
expect_eq "$(sql "SELECT status FROM work_items")" blocked
esc=$(jq -r 'select(.headers["x-goald-stage"] == "escalate") | .body.messages[1].content' "$FAKE_LOG")
case "$esc" in *"asked a human (its words): QUESTION-7: may mul use addition?"*) ok ;;
    *) fail "the escalate stage lacks the question: $esc" ;; esac
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
run "$G" resolve "$ESC" --action retry --input "no: keep multiplication"
expect_rc 0 "resolve retry"

# attempt 3 fails as attempt 1 did: a human decides again, no retry spent
step work
expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/gate/escalated "attempt 3"
expect_eq "$(sql "SELECT json_extract(payload,'\$.why') FROM events WHERE type='retry.exhausted' ORDER BY id DESC LIMIT 1")" \
    "the same failure as before the human's answer: a human decides again"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status='open'")" 1 "a new escalation"
esc=$(jq -c 'select(.headers["x-goald-stage"] == "escalate") | .body.messages[1].content' "$FAKE_LOG" | sed -n 2p | jq -r .)
case "$esc" in *"Why the item stopped:"*"E  "*"assert 5 == 6"*) ok ;; *) fail "the escalation lacks the digested failure: $esc" ;; esac
expect_eq "$(printf '%s\n' "$esc" | grep -c 'deprecated helper number')" 0 "no warnings in the escalation"

done_tests
