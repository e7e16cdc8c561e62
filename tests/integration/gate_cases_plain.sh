#!/usr/bin/env bash
# Per-test results from the commands people write: `python3 -m pytest -q`
# (goald adds -rA through PYTEST_ADDOPTS) and `python3 -m unittest discover`
# (goald adds -v) give every test case, so the item is judged per test;
# a command whose own -rf names only failures gets its counts from pytest's
# summary line (a failing gate's real pass count), and its partial list of
# cases never calls a test removed.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1
need_pytest

R="$T/calc"
make_repo "$R"
printf 'def add(a, b): return a + b\ndef half(a): return a / 3\n' >"$R/calc.py"
mkdir -p "$R/tests"
{
    printf 'import os, sys, unittest\n'
    printf 'sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n'
    printf 'import calc\n\nclass TestCalc(unittest.TestCase):\n'
    for i in 1 2 3 4 5 6 7 8; do printf '    def test_add%s(self): self.assertEqual(calc.add(%s, 1), %s)\n' "$i" "$i" "$((i + 1))"; done
    printf '    def test_half(self): self.assertEqual(calc.half(8), 4)\n'
} >"$R/tests/test_calc.py"
printf 'def test_one(): assert 1\ndef test_two(): assert 2\ndef test_never(): assert 0\n' >"$R/tests/test_other.py"
git -C "$R" add -A
git -C "$R" commit -q -m "calc whose half is wrong"
FIX='def add(a, b): return a + b\ndef half(a): return a / 2\n'
{
    echo '{"content": {"components": ["calc.py"], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash"], "verification": []}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "Fix half", "type": "code", "effort": "S", "critical": true, "depends_on": []}]}}'
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"$FIX\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"half divides by 2\"}}]}"
    echo '{"content": {"verdict": "pass", "findings": []}}'
} >"$T/calc.jsonl"
start_fake_llm calc openai "$T/calc.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
jq -n --arg repo "$R" '{title: "Fix half", description: "half(8) must be 4: tests/test_calc.py::TestCalc::test_half",
    repo: $repo, base_branch: "main", success_criteria: ["half divides by two"],
    verification: [
      {name: "pyq", type: "test", command: "python3 -m pytest -q -p no:cacheprovider tests/test_calc.py", must_pass: true},
      {name: "unit", type: "test", command: "python3 -m unittest discover -s tests -p test_calc.py", must_pass: true},
      {name: "pyf", type: "test", command: "python3 -m pytest -q -rf -p no:cacheprovider tests/test_other.py", must_pass: false}]}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit

step plan; step plan
step work; R1=$RUN
expect_eq "$(jqo .status)" success "the fix"
cases() { sql "SELECT count(*) FROM gate_cases c JOIN gate_results r ON r.id = c.gate_result_id WHERE r.run_id = '$R1' AND r.name = '$1' AND r.passed = $2"; }
# the item's passing runs name all nine tests
expect_eq "$(cases pyq 1)" 9 "pytest -q: every case named"
expect_eq "$(cases unit 1)" 9 "unittest: every case named"
expect_eq "$(sql "SELECT tests_format FROM gate_results WHERE run_id = '$R1' AND name = 'unit' AND passed = 1")" unittest "unittest's format"
# the baseline's failing runs
base() { sql "SELECT format || ' ' || json_array_length(cases) FROM gate_baselines WHERE gate = '$1' AND passed = 0"; }
expect_eq "$(base pyq)" "pytest 9" "pytest -q at the baseline: the failure and the passes"
expect_eq "$(base unit)" "unittest 9" "unittest at the baseline: every case"
# a failing gate whose own -rf names only its failure: pytest's summary
# gives the counts
expect_eq "$(sql "SELECT passed || ' ' || tests_passed || '/' || tests_failed FROM gate_results WHERE run_id = '$R1' AND name = 'pyf'")" \
    "0 2/1" "pytest -rf, failing: its summary's counts, not the named cases'"
v=$(sql "SELECT data FROM decisions WHERE kind = 'verification' AND run_id = '$R1'")
expect_eq "$(echo "$v" | jq -r '[.gates[] | select(.gate == "pyq" or .gate == "unit") | .granularity] | join(",")')" "test,test" "judged per test"
expect_eq "$(echo "$v" | jq -r '[.gates[] | select(.gate == "pyq") | .fixed[]] | join(",")')" \
    "tests/test_calc.py::TestCalc::test_half" "pytest: the fixed case"
expect_eq "$(echo "$v" | jq -r '[.gates[] | select(.gate == "unit") | .fixed[]] | join(",")')" \
    "test_calc.TestCalc.test_half" "unittest: the fixed case"
# the record shows pytest's own summary, not 9 PASSED lines of -rA
tail=$(sql "SELECT output_tail FROM gate_results WHERE run_id = '$R1' AND name = 'pyq'")
case "$tail" in *"PASSED tests/"*) fail "the tail holds -rA's PASSED lines: $tail" ;; *"9 passed"*) ok ;;
    *) fail "the tail lacks the summary: $tail" ;; esac
done_tests
