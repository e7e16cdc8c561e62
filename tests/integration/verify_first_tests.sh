#!/usr/bin/env bash
# The first tests of a project: a gate whose tests do not exist at the
# baseline (`sh run_tests.sh` fails there: "no tests"; it runs no test
# case) cannot judge the item's product with the original tests: on the
# product-only tree (the item's new test files left out) it fails the
# same way. That run is inconclusive, never "tests weakened" or "the
# product does not fix what the goal is about": an honest item that adds
# the project's first tests and the fix is done; the gate is recorded as
# inconclusive on the product-only tree.  Only so: when the item also
# rewrote the runner the gate names, or its tests count no case, the
# product-only run judges as ever (the item fails).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
R="$T/tool"
mkdir -p "$R"
cp "$GOALD_SOURCE_DIR/share/demo-project/add.sh" "$R/"
cat >"$R/run_tests.sh" <<'SH'
#!/bin/sh
# runs every tests/*.sh; no tests is a failure
ls tests/*.sh >/dev/null 2>&1 || { echo "no tests found in tests/"; exit 1; }
rc=0
for t in tests/*.sh; do sh "$t" || rc=1; done
exit $rc
SH
git -C "$R" init -q -b main && git -C "$R" add -A &&
    git -C "$R" -c user.email=t@e -c user.name=t commit -q -m init
FIX=$(jq -nc '{name: "edit", arguments: {path: "add.sh", old_text: "$(($1 - $2))", new_text: "$(($1 + $2))"}}')
TEST='if [ "$(sh ./add.sh 2 3)" = 5 ]; then echo "ok 1 - add 2 3"; else echo "not ok 1 - add 2 3"; exit 1; fi
'
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix add and add its first test")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$FIX, $(write tests/add_test.sh "$TEST"), $(complete "add.sh adds; tests/add_test.sh checks it")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/s.jsonl"
export GOALD_LLM_SCRIPT="$T/s.jsonl"
submit_fresh first "$R" ', "description": "add.sh subtracts; fix it and add the first test", "success_criteria": ["add.sh adds two numbers"], "verification": [{"name": "tests", "type": "test", "command": "sh run_tests.sh", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)" success "the item that adds the first tests is done"
fr=$(sql "SELECT coalesce(failure_reason, '') FROM runs WHERE id = '$RUN'")
case "$fr" in *"tests weakened"*|*"does not fix"*) fail "refused: $fr" ;; *) ok ;; esac
v=$(sql "SELECT data FROM decisions WHERE kind = 'verification' ORDER BY id DESC LIMIT 1")
expect_eq "$(printf '%s' "$v" | jq -r '.restored_inputs_gates[0].inconclusive')" true \
    "the product-only run is inconclusive"
expect_eq "$(printf '%s' "$v" | jq -r '.tests_weakened')" false "not weakened"
expect_eq "$(sql "SELECT status FROM work_items")" done "done"

# --- the attacks this rule must not let through -------------------------------
# attempt KEY FIX TOOL_CALLS...: a fresh goal on a fresh copy of the project
# whose one item makes these calls; its run's status and failure reason
attempt() {
    local name=$1 r="$T/$1" calls
    shift
    cp -a "$R" "$r"
    git -C "$r" checkout -q -- . 2>/dev/null || true
    git -C "$r" reset -q --hard "$(git -C "$R" rev-list --max-parents=0 HEAD)"
    calls=$(printf '%s,' "$@")
    {
        echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
        echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix add and add its first test")}"
        echo "{\"stage\": \"execute\", \"tool_calls\": [${calls}$(complete "done")]}"
        echo "{\"stage\": \"review\", \"content\": $REVIEW}"
    } >"$T/$name.jsonl"
    export GOALD_LLM_SCRIPT="$T/$name.jsonl"
    submit_fresh "$name" "$r" ', "description": "add.sh subtracts; fix it and add the first test", "success_criteria": ["add.sh adds two numbers"], "verification": [{"name": "tests", "type": "test", "command": "sh run_tests.sh", "must_pass": true}]'
    step plan; step plan; step work
}
# the runner the gate names, rewritten to pass whatever runs
attempt swapped "$FIX" "$(write tests/add_test.sh "$TEST")" \
    "$(write run_tests.sh 'echo "ok 1 - everything"')"
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a rewritten runner is judged as ever"
case "$(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")" in *"tests weakened"*run_tests.sh*) ok ;;
    *) fail "the failure does not name the rewritten runner: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")" ;; esac
# a first test that counts nothing: a pass without a test case proves nothing
attempt silent "$FIX" "$(write tests/add_test.sh '[ "$(sh ./add.sh 2 3)" = 5 ]
')"
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a pass that counted no test case"
done_tests
