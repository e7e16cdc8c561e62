#!/usr/bin/env bash
# Criteria belong to items, and the evidence says what backs each one
# (docs/verification.md, "Evidence kinds"), on a Python project tested with
# pytest and three criteria: a test one, "CHANGELOG.rst has a new entry"
# and "new regression tests fail on the original code":
#   - the plan prompt numbers the criteria; a plan that leaves the changelog
#     criterion to no item is refused, naming it, and the model is asked
#     again;
#   - each item's execute prompt lists only the criteria the plan gave it;
#   - evidence is one row per (criterion, item that serves it): the test
#     criterion is `test` (test_add passed); the changelog criterion is
#     `review` (the review's finding, quoted), never `gate` (pytest cannot
#     see a changelog); the new-tests criterion is `test` for the item
#     whose new test fails on the old code (fail_to_pass) and `unchecked`
#     for the item that wrote no test; the PR body and `goald report` show
#     the same table.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
need_pytest
forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=calc

R="$T/calc"
calc_repo "$R" 'def add(a, b): return a - b\ndef sub(a, b): return a - b\n' \
    'def test_sub(): assert calc.sub(5, 3) == 2' "calc: add subtracts"
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "file://$T/origin.git"
TESTS='import os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import calc
def test_sub(): assert calc.sub(5, 3) == 2
def test_add(): assert calc.add(2, 3) == 5
'
item() { # KEY TITLE CRITERIA DEPS
    jq -nc --arg k "$1" --arg t "$2" --argjson c "$3" --argjson d "$4" \
        '{key: $k, title: $t, description: "", type: "code", priority: 50, effort: "S", critical: true, depends_on: $d, criteria: $c}'
}
BAD=$(jq -nc --argjson a "$(item wi-1 "Fix add" '[0, 2]' '[]')" '{work_items: [$a]}')
GOOD=$(jq -nc --argjson a "$(item wi-1 "Fix add" '[0, 2]' '[]')" \
    --argjson b "$(item wi-2 "Changelog" '[1, 2]' '["wi-1"]')" '{work_items: [$a, $b]}')
FINDING='{"verdict": "pass", "findings": [{"aspect": "code_smell", "severity": "info", "note": "The CHANGELOG.rst entry names the add fix"}]}'
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $BAD}"
    echo "{\"content\": $GOOD}"
    jq -nc --argjson a "$(write calc.py 'def add(a, b): return a + b
def sub(a, b): return a - b
')" --argjson b "$(write tests/test_calc.py "$TESTS")" --argjson c "$(complete "add adds; test_add checks it")" \
        '{tool_calls: [$a, $b, $c]}'
    echo "{\"content\": $REVIEW}"
    jq -nc --argjson a "$(write CHANGELOG.rst 'Fixed: add.
')" --argjson c "$(complete "wrote the release note")" '{tool_calls: [$a, $c]}'
    echo "{\"content\": $FINDING}"
    echo '{"content": {"criteria": [{"index": 1, "verdict": "met", "quote": "+Fixed: add."}]}}'
} >"$T/calc.jsonl"
start_fake_llm calc openai "$T/calc.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
jq -n --arg repo "$R" '{title: "Fix add", description: "add subtracts", repo: $repo, base_branch: "main",
    success_criteria: ["test_add passes", "CHANGELOG.rst has a new entry", "new regression tests fail on the original code"],
    verification: [{name: "pytest", type: "test", command: "python3 -m pytest -rA -q -p no:cacheprovider tests", must_pass: true}],
    publish: {push: true, remote: "origin", pull_request: true}}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit; GID=$OUT

# --- the plan: numbered criteria; an unserved criterion is refused ------------
step plan; step plan
expect_eq "$(jqo .status)" success "the plan stage (after one repair)"
plan_req=$(jq -c 'select(.headers["x-goald-stage"] == "plan") | .body.messages[1].content' "$FAKE_LOG" | head -n1)
case "$plan_req" in *"0. test_add passes"*"1. CHANGELOG.rst has a new entry"*"2. new regression tests"*) ok ;;
    *) fail "the plan prompt does not number the criteria: $plan_req" ;; esac
expect_eq "$(sql "SELECT json_extract(payload, '\$.error') FROM events WHERE type='plan.refused'")" \
    'success criterion 1 ("CHANGELOG.rst has a new entry") is served by no item' "the refusal names the criterion"
expect_eq "$(sql "SELECT group_concat(key||'='||criteria, ' ') FROM (SELECT key, criteria FROM work_items ORDER BY key) AS q")" \
    "wi-1=[0,2] wi-2=[1,2]" "the assignment is stored"

# --- the items: each prompt lists only its criteria -----------------------------
step work; expect_eq "$(jqo .status)" success "wi-1"
step work; expect_eq "$(jqo .status)" success "wi-2"
ex1=$(jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" | sed -n 1p)
ex2=$(jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" | sed -n 2p)
case "$ex1" in *"test_add passes"*"new regression tests fail on the original code"*) ok ;; *) fail "wi-1's prompt lacks its criteria: $ex1" ;; esac
case "$ex1" in *CHANGELOG*) fail "wi-1's prompt lists the changelog criterion: $ex1" ;; *) ok ;; esac
case "$ex2" in *"CHANGELOG.rst has a new entry"*"new regression tests"*) ok ;; *) fail "wi-2's prompt lacks its criteria: $ex2" ;; esac
case "$ex2" in *"test_add passes"*) fail "wi-2's prompt lists wi-1's criterion: $ex2" ;; *) ok ;; esac

# --- the review sees the item's criteria and what the gates found ----------------
rv1=$(jq -r 'select(.headers["x-goald-stage"] == "review") | .body.messages[1].content' "$FAKE_LOG" | head -c 20000)
case "$rv1" in *"Success criteria this item serves:"*"- test_add passes"*"(1 more of the goal's criteria belong to other items.)"*) ok ;;
    *) fail "wi-1's review request does not list its criteria: $rv1" ;; esac
case "$rv1" in *"- pytest: passed ("*"new tests that fail on the old code and pass now: tests/test_calc.py::test_add"*) ok ;;
    *) fail "wi-1's review request does not say what the gates found: $rv1" ;; esac

# --- the evidence: one row per (criterion, serving item), with its kind ---------
ev() { sql "SELECT json_extract(d.data, '\$.$3') FROM decisions d JOIN work_items w ON w.id = d.item_id WHERE d.kind='evidence' AND w.key='$1' AND d.note LIKE '$2%' ORDER BY d.id DESC LIMIT 1"; }
expect_eq "$(sql "SELECT count(*) FROM decisions WHERE kind='evidence'")" 4 "four rows: wi-1 x 2, wi-2 x 2"
expect_eq "$(ev wi-1 test_add kind)" test "test_add passes: test"
expect_eq "$(ev wi-1 test_add tests)" '["tests/test_calc.py::test_add"]' "backed by test_add"
expect_eq "$(ev wi-1 new kind)" test "new tests, wi-1: test (its new test fails on the old code)"
expect_eq "$(ev wi-1 new fail_to_pass)" '["tests/test_calc.py::test_add"]' "wi-1's fail_to_pass"
expect_eq "$(ev wi-2 CHANGELOG kind)" review "the changelog criterion: review, never gate"
expect_eq "$(ev wi-2 CHANGELOG backed_by)" '[]' "no gate is cited for the changelog"
case "$(ev wi-2 CHANGELOG backing)" in *'"The CHANGELOG.rst entry names the add fix"'*) ok ;;
    *) fail "the review is not quoted: $(ev wi-2 CHANGELOG backing)" ;; esac
expect_eq "$(ev wi-2 new kind)" unchecked "new tests, wi-2: unchecked (no fail_to_pass case)"
case "$(ev wi-2 new backing)" in *"no fail_to_pass case"*) ok ;; *) fail "no reason: $(ev wi-2 new backing)" ;; esac

# --- the PR body and the report show the same table -----------------------------
step work; expect_eq "$(jqo .status)" success "publish"
body=$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/calc/pulls")][0].json.body' "$FORGE_LOG")
rows=$(printf '%s\n' "$body" | sed -n '/^| criterion | item | kind | what backs it |/,/^$/p' | grep '^| [tCn]' || true)
expect_eq "$(printf '%s\n' "$rows" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';')" \
    " test_add passes | wi-1 | test ; new regression tests fail on the original code | wi-1 | test ; CHANGELOG.rst has a new entry | wi-2 | review ; new regression tests fail on the original code | wi-2 | unchecked ; CHANGELOG.rst has a new entry | (goal) | review ;" \
    "the PR's rows (the goal's evaluation asked only about the changelog: test cases prove the others)"
case "$rows" in *"| wi-1 | test | test \`tests/test_calc.py::test_add\` fails before, passes after |"*) ok ;; *) fail "PR: fail_to_pass row: $rows" ;; esac
case "$rows" in *"| wi-2 | review | review (code_smell, info): \"The CHANGELOG.rst entry"*) ok ;; *) fail "PR: review row: $rows" ;; esac
run "$G" report "$GID" --json
expect_eq "$(jqo '[.evidence[] | "\(.item):\(.kind)"] | join(" ")')" "wi-1:test wi-1:test wi-2:review wi-2:unchecked null:review" "report: the same kinds"
expect_eq "$(jqo '[.evidence[] | select(.kind == "gate")] | length')" 0 "report: no gate row"
run "$G" report "$GID"
expect_out "unchecked"

done_tests
