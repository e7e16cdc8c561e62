#!/usr/bin/env bash
# An item's baseline is the commit of the item before it, whose gates
# passed on that very tree during its verification: that result is the
# baseline (cached by tree in gate_baselines), the gates are not run on it
# again, and it still judges per test case:
#   - item 1 adds a function and its test: the gates run on the base commit
#     (two gate.baseline runs) and on item 1's tree (pass);
#   - item 2's first attempt breaks add(): "tests that passed at the
#     baseline <item 1's commit> fail now: tests/test_calc.py::test_add",
#     judged against item 1's cached result, with no gate.baseline run on
#     item 1's commit; its retry is done; the final check passes: completed.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=2
need_pytest
R="$T/calc"
calc_repo "$R" 'def add(a, b):\n    return a + b\n' 'def test_add(): assert calc.add(2, 3) == 5' calc

WITH_MUL='def add(a, b):\n    return a + b\ndef mul(a, b):\n    return a * b\n'
TEST_MUL='import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\nimport calc\ndef test_mul(): assert calc.mul(2, 3) == 6\n'
BROKEN='def add(a, b):\n    return 0\ndef mul(a, b):\n    return a * b\ndef sub(a, b):\n    return a - b\n'
GOOD='def add(a, b):\n    return a + b\ndef mul(a, b):\n    return a * b\ndef sub(a, b):\n    return a - b\n'
{
    echo '{"content": {"components": ["calc.py"], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash"], "verification": []}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "Add mul", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Add sub", "type": "code", "effort": "S", "critical": true, "depends_on": ["wi-1"]}]}}'
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"$WITH_MUL\"}}, {\"name\": \"write\", \"arguments\": {\"path\": \"tests/test_mul.py\", \"content\": \"$TEST_MUL\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"added mul\"}}]}"
    echo '{"content": {"verdict": "pass", "findings": []}}'
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"$BROKEN\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"added sub\"}}]}"
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"$GOOD\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"added sub, add kept\"}}]}"
    echo '{"content": {"verdict": "pass", "findings": []}}'
} >"$T/calc.jsonl"
start_fake_llm calc openai "$T/calc.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
jq -n --arg repo "$R" '{title: "mul and sub", description: "two functions", repo: $repo,
    base_branch: "main", success_criteria: ["calc has mul and sub"],
    verification: [
      {name: "pytest", type: "test", command: "python3 -m pytest -rA -q -p no:cacheprovider tests", must_pass: true},
      {name: "compile", type: "build", command: "python3 -m compileall -q .", must_pass: true}]}' >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 0 submit
GID=$OUT

step plan
step plan
step work
expect_eq "$(jqo .status)" success "item 1"
H1=$(sql "SELECT commit_sha FROM work_items WHERE key = 'wi-1'")
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.baseline'")" 2 "baseline runs for item 1 (both gates, on the base commit)"
# item 1's passing gates are cached under its tree, which is its commit's
expect_eq "$(sql "SELECT count(*) FROM gate_baselines WHERE baseline = '$(git -C "$R" rev-parse "$H1^{tree}")' AND passed = 1")" 2 \
    "item 1's gate results cached under its commit's tree"

step work
R2=$RUN
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "item 2 broke add()"
case "$(sql "SELECT failure_reason FROM runs WHERE id = '$R2'")" in
    *"tests that passed at the baseline ${H1:0:12} fail now: tests/test_calc.py::test_add"*) ok ;;
    *) fail "judged against item 1's commit per test case: $(sql "SELECT failure_reason FROM runs WHERE id = '$R2'")" ;;
esac
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.baseline'")" 2 "no gate run again on item 1's commit"
expect_eq "$(sql "SELECT passed || ' ' || classification FROM gate_results WHERE run_id = '$R2' AND name = 'pytest'")" \
    "0 introduced" "item 2's pytest"

step work
expect_eq "$(jqo .status)" success "item 2's retry"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.baseline'")" 2 "still no baseline run for item 2"
step work
expect_eq "$(jqo .status)" success "publish"
expect_eq "$(sql "SELECT status || ' ' || partial FROM goals")" "completed 0" "completed: the final check ran the gates on the head"
done_tests
