#!/usr/bin/env bash
# Truthful verification on a Python project tested with Debian's
# python3-pytest (-rA summary lines parsed into test cases):
#   - the base has one failing test; an item that makes 8 more fail is
#     failed (test-level comparison: at gate level the gate failed before
#     and after), its 8 introduced test cases named in the reason and in the
#     retry's prompt;
#   - the retry keeps the suite at its one pre-existing failure, which the
#     goal did not set out to fix: the item is done (not verified), and the
#     final check on the branch head completes the goal with partial: true
#     and that failure listed in the report.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=2
need_pytest

R="$T/calc"
calc_repo "$R" 'def add(a, b): return a + b
def sub(a, b): return a - b
def mul(a, b): return a * b
def div(a, b): return a / b
def neg(a): return -a
def sq(a): return a * a
def inc(a): return a + 1
def dec(a): return a - 1
def half(a): return a / 3
' 'def test_add(): assert calc.add(2, 3) == 5
def test_sub(): assert calc.sub(5, 3) == 2
def test_mul(): assert calc.mul(2, 3) == 6
def test_div(): assert calc.div(6, 3) == 2
def test_neg(): assert calc.neg(4) == -4
def test_sq(): assert calc.sq(3) == 9
def test_inc(): assert calc.inc(1) == 2
def test_dec(): assert calc.dec(5) == 4
def test_half(): assert calc.half(8) == 4' "calc with one failing test"

# the item's two attempts: a "refactor" that breaks 8 functions, then a good one
BROKEN='def add(a, b): return 0\ndef sub(a, b): return 0\ndef mul(a, b): return 0\ndef div(a, b): return 0\ndef neg(a): return 0\ndef sq(a): return 0\ndef inc(a): return 0\ndef dec(a): return 0\ndef half(a): return a / 3\n'
GOOD='def add(a, b):\n    return a + b\ndef sub(a, b):\n    return a - b\ndef mul(a, b):\n    return a * b\ndef div(a, b):\n    return a / b\ndef neg(a):\n    return -a\ndef sq(a):\n    return a * a\ndef inc(a):\n    return a + 1\ndef dec(a):\n    return a - 1\ndef half(a):\n    return a / 3\n'
{
    echo '{"content": {"components": ["calc.py"], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash"], "verification": []}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "Reformat calc.py", "type": "refactor", "effort": "S", "critical": true, "depends_on": []}]}}'
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"$BROKEN\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"reformatted\"}}]}"
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"$GOOD\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"reformatted, behaviour kept\"}}]}"
    echo '{"content": {"verdict": "pass", "findings": []}}'
} >"$T/calc.jsonl"
start_fake_llm calc openai "$T/calc.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
jq -n --arg repo "$R" '{title: "Reformat calc.py", description: "one function per two lines",
    repo: $repo, base_branch: "main", success_criteria: ["calc.py is reformatted"],
    verification: [
      {name: "pytest", type: "test", command: "python3 -m pytest -rA -q -p no:cacheprovider tests", must_pass: true},
      {name: "compile", type: "build", command: "python3 -m compileall -q .", must_pass: true}]}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit; GID=$OUT

step plan; step plan

# attempt 1: 1 failure -> 9: the 8 new ones are introduced
step work; R1=$RUN
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "8 more failing tests fail the item"
expect_eq "$(sql "SELECT passed||' '||classification FROM gate_results WHERE run_id='$R1' AND name='pytest'")" "0 introduced"
v=$(sql "SELECT data FROM decisions WHERE kind='verification' AND run_id='$R1'")
expect_eq "$(echo "$v" | jq -r '.granularity')" test "granularity"
expect_eq "$(echo "$v" | jq -r '.introduced | length')" 8 "introduced test cases"
expect_eq "$(echo "$v" | jq -r '.pre_existing | join(",")')" "tests/test_calc.py::test_half" "pre-existing"
case "$(sql "SELECT failure_reason FROM runs WHERE id='$R1'")" in
    *"tests that passed at the baseline"*"fail now: tests/test_calc.py::test_add, tests/test_calc.py::test_sub"*) ok ;;
    *) fail "failure reason: $(sql "SELECT failure_reason FROM runs WHERE id='$R1'")" ;; esac

# attempt 2: its prompt names the failing cases; back to the one old failure
step work; R2=$RUN
expect_eq "$(jqo .status)" success "the retry"
retry=$(jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" | tail -n1)
case "$retry" in *"fail now: tests/test_calc.py::test_add"*"tests/test_calc.py::test_dec"*) ok ;;
    *) fail "the retry's prompt lacks the failing test cases: $retry" ;; esac
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id='$R2' AND name='pytest'")" pre-existing
expect_eq "$(sql "SELECT status||' '||ifnull(verified, 'NULL') FROM work_items")" "done NULL" "done, not proven"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.baseline'")" 2 "the baseline ran once per gate (cached for the retry)"

# publish: the final check on the branch head -> completed, partial
step work
expect_eq "$(jqo .status)" success "publish"
expect_eq "$(sql "SELECT status||' '||partial FROM goals")" "completed 1" "completed as partial"
run "$G" report "$GID" --json
expect_eq "$(jqo '.goal.partial')" true "report: partial"
expect_eq "$(jqo '.partial_failures | map("\(.gate): \(.tests | join(","))") | join("; ")')" \
    "pytest: tests/test_calc.py::test_half" "report: the partial failures"
expect_eq "$(jqo '.work_items[0] | [.granularity, (.introduced | length), (.pre_existing | join(",")), (.baseline | length)] | @tsv')" \
    "$(printf 'test\t0\ttests/test_calc.py::test_half\t40')" "report: the item's verification"
run "$G" report "$GID"
expect_out "partial: must-pass gates still failing"
expect_out "pytest: tests/test_calc.py::test_half"

done_tests
