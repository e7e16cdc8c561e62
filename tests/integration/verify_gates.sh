#!/usr/bin/env bash
# Verification on temporary repositories with real test commands
# run in the sandbox:
#   - the first attempt leaves a failing test: the gate fails (introduced),
#     the retry's prompt carries the failure output, the fix passes the
#     gate, the review runs, the item is done with evidence rows;
#   - a test failing on the base commit too is pre-existing: not blamed
#     (only when the goal is not about it: here the goal has two
#     gates and no criterion names the failing one);
#   - a gate failing once then passing is flaky: not blamed (gates
#     run on throw-away copies, so the marker lives outside the worktree and
#     this case runs unconfined);
#   - a goal with no gate: its item is `unverified` in `report --json`.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1

# mkproj DIR: a repository whose tests are tests/*.sh, run by test.sh
mkproj() {
    make_repo "$1"
    mkdir -p "$1/tests"
    printf '#!/bin/sh\necho $(($1 + $2))\n' >"$1/add.sh"
    cat >"$1/test.sh" <<'EOF'
#!/bin/sh
fail=0
for t in tests/*.sh; do sh "$t" || fail=1; done
exit $fail
EOF
    cat >"$1/tests/add_test.sh" <<'EOF'
got=$(sh add.sh 2 3)
if [ "$got" = 5 ]; then echo "ok - add 2 3"; else echo "not ok - add 2 3: expected 5, got $got"; exit 1; fi
EOF
    git -C "$1" add -A
    git -C "$1" commit -q -m "add.sh and tests"
}

# the work item's files, as JSON tool calls: mul.sh (computing OP) and its test
MUL_TEST='got=$(sh mul.sh 2 3)\nif [ \"$got\" = 6 ]; then echo \"ok - mul 2 3\"; else echo \"not ok - mul 2 3: expected 6, got $got\"; exit 1; fi\n'
write_mul() {
    printf '{"name": "write", "arguments": {"path": "mul.sh", "content": "#!/bin/sh\\necho $(($1 %s $2))\\n"}}, {"name": "write", "arguments": {"path": "tests/mul_test.sh", "content": "%s"}}' "$1" "$MUL_TEST"
}
ELAB='{"components": ["mul.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
PLAN='{"work_items": [{"key": "wi-1", "title": "Add mul.sh", "description": "multiply two numbers", "type": "code", "priority": 80, "effort": "S", "critical": true, "depends_on": []}]}'
REVIEW='{"verdict": "concerns", "findings": [{"aspect": "code_smell", "severity": "warning", "note": "no argument check"}]}'

# ===== 1. introduced -> retry with the failure output -> fixed -> done =========
R="$T/intro"
mkproj "$R"
cat >"$T/intro.jsonl" <<EOF
{"content": $ELAB}
{"content": $PLAN}
{"content": "writing mul.sh", "tool_calls": [$(write_mul +)]}
{"tool_calls": [{"name": "complete", "arguments": {"summary": "mul.sh added"}}]}
{"content": "the test says 5: the operator is wrong", "tool_calls": [$(write_mul '*')]}
{"tool_calls": [{"name": "complete", "arguments": {"summary": "mul.sh multiplies"}}]}
{"content": $REVIEW}
EOF
start_fake_llm intro openai "$T/intro.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh intro "$R" ', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'
step plan; step plan
ITEM=$(sql "SELECT id FROM work_items")

# attempt 1: mul.sh adds; the gate fails and the failure is the item's
step work
R1=$RUN
expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/gate/retry "attempt 1"
expect_eq "$(sql "SELECT passed||' '||exit_code||' '||classification FROM gate_results WHERE run_id='$R1'")" "0 1 introduced"
case "$(sql "SELECT output_tail FROM gate_results WHERE run_id='$R1'")" in
    *"not ok - mul 2 3: expected 6, got 5"*) ok ;; *) fail "the gate's output tail lacks the failing test" ;; esac
case "$(sql "SELECT failure_reason FROM runs WHERE id='$R1'")" in
    *"gate tests failed (exit 1)"*"expected 6, got 5"*) ok ;; *) fail "failure_reason: $(sql "SELECT failure_reason FROM runs WHERE id='$R1'")" ;; esac
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$R1' AND type LIKE 'review.%'")" 0 "no review of a failing item"
expect_eq "$(sql "SELECT status||' '||tier FROM work_items")" "ready 1"
expect_eq "$(sql "SELECT json_extract(payload,'\$.action') FROM events WHERE run_id='$R1' AND type='retry.scheduled'")" retry

# attempt 2: its first prompt carries the failure output; mul.sh multiplies
step work
R2=$RUN
expect_eq "$(jqo .status)" success "attempt 2"
jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" >"$T/prompts"
expect_eq "$(wc -l <"$T/prompts")" 4 "execute requests"
first=$(sed -n 1p "$T/prompts"); retry=$(sed -n 3p "$T/prompts")
case "$first" in *"expected 6, got 5"*) fail "the first attempt cannot know the failure" ;; *) ok ;; esac
case "$retry" in *"Output of gate tests (exit 1)"*"not ok - mul 2 3: expected 6, got 5"*) ok ;;
    *) fail "the retry's prompt lacks the gate output: $retry" ;; esac
case "$retry" in *"Where earlier runs of this item left off (context pack)"*) ok ;;
    *) fail "the retry's prompt lacks the context pack: $retry" ;; esac
expect_eq "$(sql "SELECT count(*) FROM context_packs WHERE item_id='$ITEM'")" 2 "a context pack after each run"
expect_eq "$(jq -r 'select(.headers["x-goald-run"] == "'"$R2"'") | .headers["x-goald-stage"]' "$FAKE_LOG" | tr '\n' ' ')" \
    "execute execute review " "attempt 2: the review after the gates"

expect_eq "$(sql "SELECT status||' '||verified FROM work_items")" "done 1"
# the item's tree, and the product-only tree (the added tests/mul_test.sh
# left out: the original tests judge the product)
expect_eq "$(sql "SELECT count(*) || ' ' || group_concat(DISTINCT passed||' '||exit_code||' '||ifnull(classification,'-')) FROM gate_results WHERE run_id='$R2'")" "2 1 0 -"
# the review: findings stored as decisions; concerns do not block
expect_eq "$(sql "SELECT note FROM decisions WHERE kind='review_verdict'")" concerns
expect_eq "$(sql "SELECT aspect||'/'||severity||'/'||note FROM decisions WHERE kind='review_finding'")" "code_smell/warning/no argument check"
# evidence: one row per criterion, naming the gate, exit code, output hash, tree id
expect_eq "$(sql "SELECT count(*) FROM decisions WHERE kind='evidence' AND item_id='$ITEM'")" 1
ev=$(sql "SELECT data FROM decisions WHERE kind='evidence'")
gr=$(sql "SELECT json_object('exit_code', exit_code, 'output_hash', output_hash, 'tree_id', tree_id) FROM gate_results WHERE run_id='$R2' ORDER BY id LIMIT 1")
expect_eq "$(echo "$ev" | jq -r .criterion)" "sh test.sh exits 0"
expect_eq "$(echo "$ev" | jq -c '.gates[0] | {exit_code, output_hash, tree_id}')" "$(echo "$gr" | jq -c .)" "evidence = the gate's row"
expect_eq "$(echo "$ev" | jq -r '[.gates[0].gate, .gates[0].passed, (.gates[0].output_hash | test("^[0-9a-f]{64}$")), (.gates[0].tree_id | length > 0), .unverified] | @tsv')" "$(printf 'tests\ttrue\ttrue\ttrue\tfalse')"
# the commit on the goal branch holds the fix and names its evidence
sha=$(sql "SELECT commit_sha FROM work_items")
expect_eq "$(git -C "$R" show "$sha:mul.sh" | tail -1)" 'echo $(($1 * $2))'
# the gates once, as a trailer; the subject is the item's title
msg=$(git -C "$R" log -1 --format=%B "$sha")
case "$msg" in *"Gates: tests=pass"*) ok ;; *) fail "commit message lacks the gates: $msg" ;; esac
case "$msg" in *"Evidence:"*) fail "the gates said twice: $msg" ;; *) ok ;; esac
expect_eq "$(git -C "$R" log -1 --format=%s "$sha")" "Add mul.sh" "the subject"
run "$G" report "$GID" --json
expect_eq "$(jqo '.work_items[0] | [.status, .verified, .unverified, .attempts] | @tsv')" "$(printf 'done\ttrue\tfalse\t2')"
unset GOALD_LLM_PROVIDER GOALD_LLM_BASE_URL GOALD_LLM_MODEL

# ===== 2. pre-existing: the test fails on the base commit too ===================
R="$T/pre"
mkproj "$R"
cat >"$R/tests/legacy_test.sh" <<'EOF'
echo "not ok - legacy behaviour nobody fixed"; exit 1
EOF
git -C "$R" add -A; git -C "$R" commit -q -m "a test that already fails"
cat >"$T/pre.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $PLAN}
{"stage": "execute", "tool_calls": [$(write_mul '*')]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "mul.sh multiplies"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_SCRIPT="$T/pre.jsonl"
submit_fresh pre "$R" ', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}, {"name": "mul", "type": "test", "command": "sh tests/mul_test.sh", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)" success "a pre-existing failure is not blamed on the item"
expect_eq "$(sql "SELECT DISTINCT passed||' '||exit_code||' '||classification FROM gate_results WHERE name='tests'")" "0 1 pre-existing"
expect_eq "$(sql "SELECT status||' '||attempts FROM work_items")" "done 1"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type IN ('retry.scheduled','escalation.opened')")" 0
expect_eq "$(sql "SELECT json_extract(payload,'\$.gates') FROM events WHERE type='work_item.done'")" "tests=pre-existing mul=pass"
expect_eq "$(sql "SELECT json_extract(data,'\$.gates[0].classification') FROM decisions WHERE kind='evidence'")" pre-existing
# not blamed, but not proven either: the gate never passed
expect_eq "$(sql "SELECT ifnull(verified, 'NULL') FROM work_items")" NULL
run "$G" report "$GID" --json
expect_eq "$(jqo '.work_items[0] | [.status, .verified, .unverified] | @tsv')" "$(printf 'done\tfalse\tfalse')" "report of a pre-existing failure"
# the base commit really was checked: its export is gone, the repo is untouched
expect_eq "$(git -C "$R" status --porcelain)" "" "repository untouched"
expect_eq "$(ls "$T/goals/$GID" 2>/dev/null | grep -c baseline)" 0 "baseline folder removed"

# ===== 3. flaky: fails once, passes when re-run ===================================
R="$T/flaky"
make_repo "$R"
# gates run on throw-away copies of the worktree, so a marker there is gone
# by the re-run: it lives in $T, which only an unconfined gate can write
cat >"$R/flaky.sh" <<EOF
#!/bin/sh
if [ -f "$T/flaky-marker" ]; then echo "ok - second run"; exit 0; fi
touch "$T/flaky-marker"
echo "not ok - timing hiccup"; exit 1
EOF
echo .flaky-marker >"$R/.gitignore"
git -C "$R" add -A; git -C "$R" commit -q -m flaky
cat >"$T/flaky.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $PLAN}
{"stage": "execute", "tool_calls": [$(write_mul '*')]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "mul.sh multiplies"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_SCRIPT="$T/flaky.jsonl"
submit_fresh flaky "$R" ', "verification": [{"name": "flaky", "type": "test", "command": "sh flaky.sh", "must_pass": true}]'
step plan; step plan
GOALD_SANDBOX=none step work
expect_eq "$(jqo .status)" success "a flaky failure is not blamed on the item"
expect_eq "$(sql "SELECT passed||' '||exit_code||' '||classification FROM gate_results")" "0 1 flaky"
case "$(sql "SELECT output_tail FROM gate_results")" in *"timing hiccup"*) ok ;; *) fail "flaky output kept" ;; esac
expect_eq "$(sql "SELECT status||' '||attempts FROM work_items")" "done 1"
expect_eq "$(sql "SELECT json_extract(payload,'\$.gates') FROM events WHERE type='work_item.done'")" "flaky=flaky"
expect_eq "$(sql "SELECT verified FROM work_items")" 1 "a flaky gate passed when re-run"

# ===== 4. no gate at all: done, but unverified =====================================
R="$T/nogate"
make_repo "$R"
cat >"$T/nogate.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $PLAN}
{"stage": "execute", "tool_calls": [$(write_mul '*')]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "mul.sh multiplies"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_SCRIPT="$T/nogate.jsonl"
submit_fresh nogate "$R"
step plan
expect_eq "$(sql "SELECT verification FROM goals")" "[]" "no gate: none given, none from the model, none detected"
step plan; step work
expect_eq "$(jqo .status)" success
expect_eq "$(sql "SELECT status||' '||verified FROM work_items")" "done 0"
expect_eq "$(sql "SELECT count(*) FROM gate_results")" 0
run "$G" report "$GID" --json
expect_rc 0
expect_eq "$(jqo '.work_items[0] | [.key, .status, .unverified, .verified] | @tsv')" "$(printf 'wi-1\tdone\ttrue\tfalse')"
expect_eq "$(sql "SELECT json_extract(data,'\$.unverified') FROM decisions WHERE kind='evidence'")" 1
case "$(git -C "$R" log -1 --format=%B "$(sql "SELECT commit_sha FROM work_items")")" in
    *"(UNVERIFIED)"*) ok ;; *) fail "the commit does not say unverified" ;; esac
run "$G" report "$GID"
expect_rc 0
expect_out UNVERIFIED "text report"

done_tests
