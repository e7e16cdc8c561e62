#!/usr/bin/env bash
# A gate runs once per tree: the first run of a gate on a tree in a goal
# is recorded (gate_tree_runs), whoever ran it, and a pass there stands for
# any later run of the same gate on the same tree with the same gate and
# sandbox settings in the same goal; a failure is never reused, nor a pass
# that came after a failure on the same tree, nor a pass under other
# sandbox settings.
#
# The gate logs each real run (GOALD_SANDBOX=none lets it write
# runs.log), tagged with a checksum of the tree's files, so the runs are
# counted, not inferred.
#
#  1. two items and a publish retried (the push fails):
#     - item 1 fixes add.sh, adds a check to test.sh and calls run_gates
#       twice: the second call reuses the first's pass on the same tree;
#       verification runs it again (the model's runs never stand for
#       goald's);
#     - the final check's run on the head with the goal's gate inputs as
#       they were at its start (a tree no item ran on) runs in the first
#       publish and is reused by the retry;
#     - one item's runs counted: 7 before reuse, 6 after;
#     - the publish retried: 2 runs before, 1 after;
#  2. a changed value of a variable passed into the sandbox
#     (sandbox.env) is another run: the final check runs the gate again;
#  3. a gate that fails at its first run on a tree and passes at its
#     second (the model's run_gates twice) is run again by verification:
#     the pass after a failure is never reused (flaky, as ever);
#  4. a gate that passes only when luck allows (a clock, a race: here a
#     flag the test sets once) passes the model's run_gates; verification
#     runs it again, it fails, and the item fails: the model, which picks
#     when it runs the gates and can make a new tree at will, cannot shop
#     for a pass that stands for verification.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_SANDBOX=none GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1
export GOALD_CONTROL_MAX_RETRIES=1
LOG="$T/runs.log"
: >"$LOG"
# the gate: the project's tests, each real run logged with its tree's tag
# (the files are not named: a file a gate command names is a gate input)
GATE="sh test.sh; r=\$?; echo \"\$(cat \$(LC_ALL=C ls) | cksum | cut -d' ' -f1) \$r\" >>$LOG; exit \$r"
VERIF=$(jq -nc --arg c "$GATE" '[{name: "tests", type: "test", command: $c, must_pass: true}]')
# tag REPO REV: the tag the gate logs for the tree of REV
tag() { (git -C "$1" show "$2:README" && git -C "$1" show "$2:add.sh" && git -C "$1" show "$2:test.sh") | cksum | cut -d' ' -f1; }
runs_on() { grep -c "^$1 " "$LOG" || true; }

demo_repo() {
    mkdir -p "$1"
    cp "$GOALD_SOURCE_DIR/share/demo-project/"* "$1/"
    git -C "$1" init -q -b main && git -C "$1" add -A &&
        git -C "$1" -c user.email=t@e -c user.name=t commit -q -m init
}
FIX=$(edit_call add.sh '$(($1 - $2))' '$(($1 + $2))')
MORE=$(edit_call test.sh 'check 0 0 0' 'check 0 0 0
check 1 1 2')
ELAB='{"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
PLAN2='{"work_items": [{"key": "wi-1", "title": "Fix add", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Say so in the README", "type": "code", "effort": "S", "critical": false, "depends_on": ["wi-1"]}]}'

# --- 1. run_gates then verification; a publish retried ----------------------
R="$T/one"
demo_repo "$R"
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $PLAN2}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$FIX, $MORE, $GATES, $GATES, $(complete "add.sh adds")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$(write README 'add.sh adds two numbers
'), $(complete "README says so")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/one.jsonl"
export GOALD_LLM_SCRIPT="$T/one.jsonl"
submit_fresh one "$R" ", \"success_criteria\": [\"sh test.sh exits 0\"], \"verification\": $VERIF, \"publish\": {\"push\": true, \"remote\": \"origin\", \"pull_request\": false}"
step plan; step plan; step work
[ "$(jqo .status)" = success ] || fail "item 1: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
ITEM1=$RUN
T1=$(tag "$R" "$(sql "SELECT commit_sha FROM work_items WHERE key = 'wi-1'")")
expect_eq "$(runs_on "$T1")" 2 "item 1's tree: run by run_gates (not again by its second call), and by verification"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.reused' AND run_id = '$ITEM1'")" 1 "gate.reused events (run_gates' second call)"
expect_eq "$(sql "SELECT DISTINCT json_extract(payload, '\$.reused_from_run') FROM events WHERE type = 'gate.reused' AND run_id = '$ITEM1'")" "$ITEM1" \
    "each names the run of the tree's first run"
expect_eq "$(sql "SELECT count(*) FROM gate_results WHERE run_id = '$ITEM1' AND note LIKE 'reused from run %'")" 0 \
    "verification's gate result is its own run"
# item 1, counted: run_gates 1 (its second call reuses it), verification
# 1, the baseline 2 (a failure runs twice), its tests on the baseline's
# product 1, the product-only tree 1: 6.  Without reuse both run_gates
# calls ran it: 7.
expect_eq "$(wc -l <"$LOG")" 6 "item 1's gate runs"

step work
expect_eq "$(jqo .status)" success "item 2"
before_publish=$(wc -l <"$LOG")
# the goal's start -> head with test.sh as at the start: no item ran there
HEAD2=$(sql "SELECT branch FROM goals")
RESTORED=$( (git -C "$R" show "$HEAD2:README" && git -C "$R" show "$HEAD2:add.sh" && git -C "$R" show main:test.sh) | cksum | cut -d' ' -f1)
step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/push "publish: the push fails"
expect_eq "$(runs_on "$RESTORED")" 1 "the final check ran on the restored head"
expect_eq "$(( $(wc -l <"$LOG") - before_publish ))" 1 "the first publish ran one gate (the head's pass is item 2's)"
step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/push "publish retried: the push fails again"
expect_eq "$(runs_on "$RESTORED")" 1 "the retry ran nothing on the restored head"
expect_eq "$(( $(wc -l <"$LOG") - before_publish ))" 1 "nor on the head"
fc=$(sql "SELECT data FROM decisions WHERE kind = 'final_check' ORDER BY id DESC LIMIT 1")
expect_eq "$(printf '%s' "$fc" | jq -r '[.gates[] | select(.reused_from_run != null)] | length')" 2 \
    "the retry's final check cites both runs it reused"

# --- 2. another value passed into the sandbox is another run -----------------
: >"$LOG"
R="$T/two"
demo_repo "$R"
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix add")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$FIX, $(complete "add.sh adds")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/two.jsonl"
export GOALD_LLM_SCRIPT="$T/two.jsonl" GOALD_SANDBOX_ENV='["GATE_FLAVOUR"]' GATE_FLAVOUR=a
submit_fresh two "$R" ", \"success_criteria\": [\"sh test.sh exits 0\"], \"verification\": $VERIF"
step plan; step plan; step work
expect_eq "$(jqo .status)" success "the item"
T2=$(tag "$R" "$(sql "SELECT commit_sha FROM work_items WHERE key = 'wi-1'")")
expect_eq "$(runs_on "$T2")" 1 "the item's tree: one run"
GATE_FLAVOUR=b step work
expect_eq "$(jqo .status)" success "publish"
expect_eq "$(runs_on "$T2")" 2 "the final check ran the gate again: GATE_FLAVOUR changed"
expect_eq "$(sql "SELECT data FROM decisions WHERE kind = 'final_check'" | jq -r '.gates[0].reused_from_run')" null \
    "nothing reused"
unset GOALD_SANDBOX_ENV GATE_FLAVOUR

# --- 3. a pass after a failure on the same tree is never reused --------------
: >"$LOG"
R="$T/three"
demo_repo "$R"
# fails when the flag is absent (and leaves it), passes when it is there
# (and takes it away): every other run fails
FLIP="if [ -e $T/flag ]; then rm $T/flag; r=0; else : >$T/flag; r=1; fi; echo \"flip \$r\" >>$LOG; exit \$r"
FLIPV=$(jq -nc --arg c "$FLIP" '[{name: "flip", type: "test", command: $c, must_pass: true}]')
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix add")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$FIX, $GATES, $GATES, $(complete "add.sh adds")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/three.jsonl"
export GOALD_LLM_SCRIPT="$T/three.jsonl"
rm -f "$T/flag"
submit_fresh three "$R" ", \"verification\": $FLIPV"
step plan; step plan; step work
expect_eq "$(jqo .status)" success "the item"
ITEM=$RUN
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.reused'")" 0 "no pass reused"
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id = '$ITEM' ORDER BY id LIMIT 1")" flaky \
    "verification ran it: it failed, then passed (flaky)"
expect_eq "$(sql "SELECT DISTINCT passed || ' ' || reusable FROM gate_tree_runs WHERE gate = 'flip' AND tree_id = (SELECT tree_id FROM gate_results WHERE run_id = '$ITEM' LIMIT 1)")" \
    "0 0" "the tree's first runs (the model's, goald's), failures, stay its records"

# --- 4. a lucky pass of the model's run_gates is not verification's ---------
: >"$LOG"
R="$T/four"
demo_repo "$R"
# passes on a tree without NEW.txt; with it, only when the flag is there
# (it takes it away): the model's first run is its lucky one
LUCK="if [ ! -e NEW.txt ]; then r=0; elif [ -e $T/lucky ]; then rm $T/lucky; r=0; else r=1; fi; echo \"luck \$r\" >>$LOG; exit \$r"
LUCKV=$(jq -nc --arg c "$LUCK" '[{name: "luck", type: "test", command: $c, must_pass: true}]')
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Add NEW.txt")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$(write NEW.txt 'new
'), $GATES, $(complete "NEW.txt added")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/four.jsonl"
export GOALD_LLM_SCRIPT="$T/four.jsonl"
: >"$T/lucky"
submit_fresh four "$R" ", \"verification\": $LUCKV"
step plan; step plan; step work
expect_eq "$(head -1 "$LOG")" "luck 0" "the model's run_gates passed, by luck"
[ "$(jqo .status)" != success ] || fail "the item passed on the model's lucky run: $(cat "$LOG" | tr '\n' ' ')"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.reused'")" 0 "no pass reused"
expect_eq "$(grep -c '^luck 1' "$LOG")" 2 "verification ran the gate itself: it failed (and failed again on its re-run)"
done_tests
