#!/usr/bin/env bash
# Holes a review found in truthful verification, each a whole goal driven
# with a scripted model against the real binary:
#   1. an added conftest.py that deselects the failing test the goal is about:
#      "tests weakened" (added build/config files are dropped when the gates
#      are judged again with the gate inputs restored);
#   2. a test that passed at the baseline and is gone (its check file
#      deleted, no gate input changed): "tests removed";
#   3. a plan whose first item rewrites the test the goal is about so that it
#      passes, with a second item queued: not pardoned, the goal is not
#      completed;
#   4. an earlier item weakens the test (the target still fails), a later one
#      makes the code pass the weakened test: the final check restores the
#      gate inputs from the goal's start and blocks the goal;
#   5. pytest crashing at import (no summary) where the baseline had parsed
#      cases, with two must-pass gates: introduced, not "pre-existing";
#   6. a one-off goal whose model answers nothing_to_do is not completed;
#   7. a repository with a Makefile test target and a model proposing `true`:
#      the detected gate runs (and fails the item that breaks it);
#   8. a gate's report committed by the item (the runner crashes before it
#      writes its own) is never read: the copy's report goes before the gate.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
need_pytest


# pyproj DIR: calc.py with a wrong half(); test_half fails, the rest pass
pyproj() {
    calc_repo "$1" 'def add(a, b): return a + b\ndef half(a): return a / 3\n' \
        'def test_add(): assert calc.add(2, 3) == 5
def test_half(): assert calc.half(8) == 4' "calc: half is wrong"
}
PYGATE=', "verification": [{"name": "pytest", "type": "test", "command": "python3 -m pytest -rA -q -p no:cacheprovider tests", "must_pass": true}]'

# shproj DIR: add.sh subtracts (the bug); test.sh runs TAP checks of it
shproj() {
    make_repo "$1"
    printf '#!/bin/sh\necho $(($1 - $2))\n' >"$1/add.sh"
    cat >"$1/test.sh" <<'EOF'
#!/bin/sh
fail=0
n=0
check() {
    n=$((n + 1))
    got=$(sh "./$1.sh" "$2" "$3")
    if [ "$got" = "$4" ]; then echo "ok $n - $1 $2 $3"; else echo "not ok $n - $1 $2 $3"; fail=1; fi
}
check add 2 3 5
check add 10 4 14
check add 0 0 0
exit $fail
EOF
    git -C "$1" add -A; git -C "$1" commit -q -m "add.sh subtracts"
}
SHGATE=', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'
plan2() { # TITLE1 TITLE2
    printf '{"work_items": [{"key": "wi-1", "title": "%s", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "%s", "type": "code", "effort": "S", "critical": true, "depends_on": ["wi-1"]}]}' "$1" "$2"
}
# the test script with other expected values for the add checks
weak_test() { sed "s/^check add 2 3 5\$/check add 2 3 $1/; s/^check add 10 4 14\$/check add 10 4 $2/" "$3/test.sh"; }

# ===== 1. an added conftest.py deselects the target: tests weakened ==========
R="$T/conf"; pyproj "$R"
CONF='def pytest_collection_modifyitems(config, items):
    items[:] = [i for i in items if "half" not in i.name]
'
cat >"$T/conf.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Make the suite green")}
{"stage": "execute", "tool_calls": [$(write tests/conftest.py "$CONF"), $(complete "the suite is green")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/conf.jsonl"
submit_fresh conf "$R" "$PYGATE"', "success_criteria": ["test_half passes"]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a conftest.py deselecting the target fails the item"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in "tests weakened: tests/conftest.py"*"test_half"*) ok ;; *) fail "failure reason: $reason" ;; esac
expect_eq "$(sql "SELECT json_extract(data,'\$.tests_weakened')||' '||json_extract(data,'\$.gate_inputs_changed') FROM decisions WHERE kind='verification'")" \
    '1 ["tests/conftest.py"]' "the verification record"
run "$G" daemon --once
expect_eq "$(sql "SELECT status FROM goals")" blocked "the goal is not completed"
unset GOALD_LLM_SCRIPT

# ===== 2. a passing test gone, no gate input changed: tests removed ==========
R="$T/gone"; make_repo "$R"
mkdir -p "$R/checks"
printf 'add 2 3 5\n' >"$R/checks/a.chk"
printf 'add 1 1 2\n' >"$R/checks/b.chk"
printf '#!/bin/sh\necho $(($1 + $2))\n' >"$R/add.sh"
cat >"$R/test.sh" <<'EOF'
#!/bin/sh
fail=0
for f in checks/*.chk; do
    read op a b want <"$f"
    if [ "$(sh "./$op.sh" "$a" "$b")" = "$want" ]; then echo "ok - $f"; else echo "not ok - $f"; fail=1; fi
done
echo "1..$(ls checks/*.chk | wc -l)"
exit $fail
EOF
git -C "$R" add -A; git -C "$R" commit -q -m "checks"
cat >"$T/gone.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Tidy the checks")}
{"stage": "execute", "tool_calls": [$(bash_call "rm checks/b.chk"), $(complete "tidied")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/gone.jsonl"
submit_fresh gone "$R" ', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a vanished test fails the item"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in "tests removed: gate tests: checks/b.chk"*) ok ;; *) fail "failure reason: $reason" ;; esac
unset GOALD_LLM_SCRIPT

# ===== 3. item 1 rewrites the target's test to pass, item 2 queued ===========
R="$T/early"; shproj "$R"
cat >"$T/early.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan2 "Prepare the checks" "Rework add.sh")}
{"stage": "execute", "tool_calls": [$(write test.sh "$(weak_test -1 6 "$R")"), $(complete "checks prepared")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/early.jsonl"
submit_fresh early "$R" "$SHGATE"', "success_criteria": ["the check add 2 3 passes"]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a test rewritten to pass is not pardoned for a later item"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in "tests weakened: test.sh"*"add 2 3"*) ok ;; *) fail "failure reason: $reason" ;; esac
run "$G" daemon --once
expect_eq "$(sql "SELECT status FROM goals")" blocked "the goal is not completed"
unset GOALD_LLM_SCRIPT

# ===== 4. weakened early (target still failing), passed late: final check ====
R="$T/late"; shproj "$R"
cat >"$T/late.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan2 "Prepare the checks" "Rework add.sh")}
{"stage": "execute", "tool_calls": [$(write test.sh "$(weak_test 6 40 "$R")"), $(complete "checks prepared")]}
{"stage": "review", "content": $REVIEW}
{"stage": "execute", "tool_calls": [$(write add.sh '#!/bin/sh
echo $(($1 * $2))
'), $(complete "add.sh reworked")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/late.jsonl"
submit_fresh late "$R" "$SHGATE"', "success_criteria": ["the check add 2 3 passes"]'
step plan; step plan
step work; expect_eq "$(jqo .status)" success "item 1: the target fails before and after, item 2 is left"
step work; expect_eq "$(jqo .status)" success "item 2 passes the weakened test"
step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "the final check with the start's gate inputs"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in *"with the gate inputs as they were when the goal started"*"add 2 3"*) ok ;;
    *) fail "failure reason: $reason" ;; esac
expect_eq "$(sql "SELECT note FROM decisions WHERE kind='final_check'")" blocked "final_check decision"
run "$G" daemon --once
[ "$(sql "SELECT status FROM goals")" != completed ] || fail "the goal completed"; ok
unset GOALD_LLM_SCRIPT

# ===== 5. pytest crashes at import; the baseline had parsed cases ===========
R="$T/crash"; pyproj "$R"
cat >"$T/crash.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Reformat calc.py")}
{"stage": "execute", "tool_calls": [$(write calc.py 'import os
os._exit(3)
def add(a, b): return a + b
def half(a): return a / 3
'), $(complete "reformatted")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/crash.jsonl"
submit_fresh crash "$R" ', "verification": [{"name": "pytest", "type": "test", "command": "python3 -m pytest -rA -q -p no:cacheprovider tests", "must_pass": true}, {"name": "compile", "type": "build", "command": "python3 -m compileall -q calc.py", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a runner that crashed is not a pre-existing failure"
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id='$RUN' AND name='pytest'")" introduced
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in *"are not in its output now"*) ok ;; *) fail "failure reason: $reason" ;; esac
unset GOALD_LLM_SCRIPT

# ===== 6. nothing_to_do for a goal submitted once ============================
R="$T/once"; shproj "$R"
cat >"$T/once.jsonl" <<EOF
{"stage": "elaborate", "content": {"nothing_to_do": true, "reason": "all is well"}}
EOF
export GOALD_LLM_SCRIPT="$T/once.jsonl"
submit_fresh once "$R" "$SHGATE"
step plan
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/invalid_response "nothing_to_do for a one-off goal"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in *"nothing_to_do: only a run of a recurring goal may have nothing to do"*) ok ;;
    *) fail "failure reason: $reason" ;; esac
[ "$(sql "SELECT status||' '||ifnull(outcome, '-') FROM goals")" != "completed nothing_to_do" ] || fail "completed"; ok
unset GOALD_LLM_SCRIPT

# ===== 7. detected gates win over the model's `true` ==========================
R="$T/det"; shproj "$R"
printf '#!/bin/sh\necho $(($1 + $2))\n' >"$R/add.sh"
printf 'test:\n\tsh test.sh\n' >"$R/Makefile"
git -C "$R" add -A; git -C "$R" commit -q -m "add.sh adds; make test"
cat >"$T/det.jsonl" <<EOF
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash"], "verification": [{"name": "tests", "type": "test", "command": "true", "must_pass": true}]}}
{"stage": "plan", "content": $(plan1 "Tidy add.sh")}
{"stage": "execute", "tool_calls": [$(write add.sh '#!/bin/sh
echo $(($1 - $2))
'), $(complete "tidied")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/det.jsonl"
submit_fresh det "$R"
step plan
expect_eq "$(sql "SELECT json_extract(elaboration,'\$.verification_source')||' '||(SELECT group_concat(json_extract(value,'\$.name'), ',') FROM json_each(verification)) FROM goals")" \
    "detected+model make test,tests" "the detected gate first, the model's added"
step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "the detected gate fails the item that breaks it"
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id='$RUN' AND name='make test'")" introduced
unset GOALD_LLM_SCRIPT

# ===== 8. a committed report.xml is not read ==================================
R="$T/forged"; make_repo "$R"
printf '#!/bin/sh\necho $(($1 + $2))\n' >"$R/add.sh"
cat >"$R/run.sh" <<'EOF'
#!/bin/sh
set -e
sh ./add.sh 2 3 >/dev/null
cat >report.xml <<'X'
<testsuite name="s" tests="2"><testcase classname="s" name="a"/><testcase classname="s" name="b"><failure message="b"/></testcase></testsuite>
X
exit 1
EOF
git -C "$R" add -A; git -C "$R" commit -q -m "run.sh: b fails"
FORGED='<testsuite name="s" tests="2"><testcase classname="s" name="a"/><testcase classname="s" name="b"><failure message="b"/></testcase></testsuite>
'
cat >"$T/forged.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Tidy add.sh")}
{"stage": "execute", "tool_calls": [$(write add.sh '#!/bin/sh
exit 7
'), $(write report.xml "$FORGED"), $(complete "tidied")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/forged.jsonl"
submit_fresh forged "$R" ', "verification": [{"name": "checks", "type": "test", "command": "sh run.sh", "report": "report.xml", "must_pass": true}, {"name": "syntax", "type": "lint", "command": "sh -n add.sh", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a forged report does not excuse a crashed runner"
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id='$RUN' AND name='checks'")" introduced
unset GOALD_LLM_SCRIPT

done_tests
