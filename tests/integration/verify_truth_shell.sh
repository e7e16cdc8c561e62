#!/usr/bin/env bash
# Truthful verification on a shell project (TAP tests run by
# test.sh), each case a whole goal driven with a scripted model:
#   1. a wrong fix of the failing test the goal is about: the item fails
#      (class gate, "the failing test the goal is about still fails"), the
#      goal is not completed;
#   2. a regression by a later item: item 2 breaks what item 1 fixed; it is
#      judged against the goal branch before it (item 1's commit), fails, and
#      its retry's prompt names the failing test cases;
#   3. a test script rewritten to always pass: "tests weakened", the item
#      fails, gate_inputs_changed is recorded;
#   4. a gate that writes and deletes files: nothing of it is committed, the
#      worktree is unchanged;
#   5. a read-only goal (allowed_actions ["read"], no gates of its own): the
#      model's proposed gate never runs, the branch gets no commit;
#   6. protected_paths: write refuses a protected file (class policy), and a
#      change made with bash is refused at commit (the item fails, policy);
#      intake names the field of a bad glob.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0

# mkproj DIR: add.sh subtracts (the bug), sub.sh subtracts; test.sh runs
# numbered TAP checks of both and fails when one fails.
mkproj() {
    make_repo "$1"
    printf '#!/bin/sh\necho $(($1 - $2))\n' >"$1/add.sh"
    printf '#!/bin/sh\necho $(($1 - $2))\n' >"$1/sub.sh"
    cat >"$1/test.sh" <<'EOF'
#!/bin/sh
fail=0
n=0
check() {
    n=$((n + 1))
    got=$(sh "./$1.sh" "$2" "$3")
    if [ "$got" = "$4" ]; then echo "ok $n - $1 $2 $3"; else echo "not ok $n - $1 $2 $3"; echo "# got $got"; fail=1; fi
}
check add 2 3 5
check add 10 4 14
check add 0 0 0
check sub 5 3 2
check sub 9 9 0
exit $fail
EOF
    git -C "$1" add -A
    git -C "$1" commit -q -m "add.sh subtracts"
}

write() { # PATH CONTENT (already JSON-escaped)
    printf '{"name": "write", "arguments": {"path": "%s", "content": "%s"}}' "$1" "$2"
}
complete() { printf '{"name": "complete", "arguments": {"summary": "%s"}}' "$1"; }
ELAB='{"components": ["add.sh"], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
REVIEW='{"verdict": "pass", "findings": []}'
GATES=', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'

# ===== 1. a wrong fix of the failing test the goal is about ===================
R="$T/wrong"; mkproj "$R"
cat >"$T/wrong.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Fix add.sh")}
{"stage": "execute", "tool_calls": [$(write add.sh '#!/bin/sh\necho $(($1 * $2))\n'), $(complete "add.sh multiplies now")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/wrong.jsonl"
submit_fresh wrong "$R" "$GATES"', "success_criteria": ["the tests gate passes: sh add.sh adds"]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a wrong fix fails the item"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in *"the failing test the goal is about still fails: add 2 3"*) ok ;;
    *) fail "failure reason: $reason" ;; esac
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id='$RUN'")" pre-existing
expect_eq "$(sql "SELECT json_extract(data,'\$.granularity')||' '||json_extract(data,'\$.pre_existing') FROM decisions WHERE kind='verification'")" \
    'test ["add 2 3","add 10 4"]' "the verification record"
# recovery goes on (no more script: it ends escalated), never completed
run "$G" daemon --once
expect_eq "$(sql "SELECT status FROM goals")" blocked "the goal is not completed: blocked on an escalation"
expect_eq "$(sql "SELECT status FROM work_items")" escalated "the item ends escalated"
expect_eq "$(git -C "$R" rev-list --count "main..$(sql "SELECT branch FROM goals")")" 0 "nothing committed"
run "$G" report "$GID" --json
expect_eq "$(jqo '.work_items[0].pre_existing | join(",")')" "add 2 3,add 10 4" "report: pre_existing"
expect_eq "$(jqo '.work_items[0].granularity')" test "report: granularity"
expect_eq "$(jqo '.work_items[0].baseline')" "$(git -C "$R" rev-parse main)" "report: baseline"
unset GOALD_LLM_SCRIPT

# ===== 2. a regression by a later item; the retry's prompt names the cases ====
R="$T/regress"; mkproj "$R"
{
    echo "{\"content\": $ELAB}"
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "Fix add.sh", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Tidy add.sh", "type": "refactor", "effort": "S", "critical": true, "depends_on": ["wi-1"]}]}}'
    echo "{\"tool_calls\": [$(write add.sh '#!/bin/sh\necho $(($1 + $2))\n'), $(complete "add.sh adds")]}"
    echo "{\"content\": $REVIEW}"
    echo "{\"tool_calls\": [$(write add.sh '#!/bin/sh\n# tidy\necho $(($1 - $2))\n'), $(complete "tidied add.sh")]}"
    echo "{\"tool_calls\": [$(write add.sh '#!/bin/sh\n# tidy\necho $(($1 + $2))\n'), $(complete "tidied add.sh, adding again")]}"
    echo "{\"content\": $REVIEW}"
} >"$T/regress.jsonl"
start_fake_llm regress openai "$T/regress.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1 GOALD_CONTROL_MAX_RETRIES=2
submit_fresh regress "$R" "$GATES"
step plan; step plan
step work; expect_eq "$(jqo .status)" success "item 1 fixes add.sh"
c1=$(sql "SELECT commit_sha FROM work_items WHERE key='wi-1'")
step work; R2=$RUN
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "item 2's regression fails it"
expect_eq "$(sql "SELECT classification FROM gate_results WHERE run_id='$R2' ORDER BY id LIMIT 1")" introduced
expect_eq "$(sql "SELECT json_extract(data,'\$.baseline') FROM decisions WHERE kind='verification' AND run_id='$R2'")" "$c1" \
    "item 2's baseline is the goal branch with item 1's commit"
expect_eq "$(sql "SELECT json_extract(data,'\$.introduced') FROM decisions WHERE kind='verification' AND run_id='$R2'")" \
    '["add 2 3","add 10 4"]' "introduced test cases"
step work; expect_eq "$(jqo .status)" success "item 2's retry"
retry=$(jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" | tail -n1)
case "$retry" in *"tests that passed at the baseline ${c1:0:12} fail now: add 2 3, add 10 4"*) ok ;;
    *) fail "the retry's prompt lacks the failing test cases: $retry" ;; esac
expect_eq "$(sql "SELECT group_concat(status, ' ') FROM (SELECT status FROM work_items ORDER BY key) AS q1")" "done done"
unset GOALD_LLM_PROVIDER GOALD_LLM_BASE_URL GOALD_LLM_MODEL
export GOALD_CONTROL_MAX_RETRIES=0

# ===== 3. a test script rewritten to always pass: tests weakened =============
R="$T/weak"; mkproj "$R"
cat >"$T/weak.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Make the tests pass")}
{"stage": "execute", "tool_calls": [$(write test.sh '#!/bin/sh\necho \"ok 1 - add 2 3\"\nexit 0\n'), $(complete "the tests pass")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/weak.jsonl"
submit_fresh weak "$R" "$GATES"', "success_criteria": ["sh test.sh exits 0"]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a weakened test fails the item"
reason=$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")
case "$reason" in "tests weakened: test.sh"*) ok ;; *) fail "failure reason: $reason" ;; esac
expect_eq "$(sql "SELECT json_extract(data,'\$.gate_inputs_changed') FROM decisions WHERE kind='verification'")" '["test.sh"]'
expect_eq "$(sql "SELECT json_extract(data,'\$.tests_weakened') FROM decisions WHERE kind='verification'")" 1
expect_eq "$(sql "SELECT group_concat(passed, ' ') FROM (SELECT passed FROM gate_results ORDER BY id) AS q2")" "1 0" \
    "the gate passes with the new test.sh, fails with the old one"
run "$G" report "$GID" --json
expect_eq "$(jqo '.work_items[0].gate_inputs_changed | join(",")')" test.sh "report: gate_inputs_changed"
# report --item: each gate's latest result, its failing tests, its output
run "$G" report "$GID" --item wi-1 --json
expect_rc 0 "report --item"
expect_eq "$(jqo '[.gates[] | "\(.gate) \(.passed) \(.restored_inputs) \(.failing_tests | join(","))"] | join("; ")')" \
    "tests true false ; tests false true add 2 3,add 10 4" "report --item: the gates"
case "$(jqo '.gates[1].output_tail')" in *"not ok 1 - add 2 3"*) ok ;; *) fail "report --item: no output tail: $OUT" ;; esac
run "$G" report "$GID" --item wi-1
expect_out "failing tests: add 2 3, add 10 4"
expect_out "gate tests (gate inputs restored): fail"
run "$G" report "$GID" --item wi-9
expect_rc 2 "report --item of an unknown key"
expect_err 'no work item "wi-9"'
unset GOALD_LLM_SCRIPT

# ===== 4. a gate that writes files: nothing of it is committed ===============
R="$T/writes"; mkproj "$R"
cat >"$T/writes.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Fix add.sh")}
{"stage": "execute", "tool_calls": [$(write add.sh '#!/bin/sh\necho $(($1 + $2))\n'), {"name": "run_gates", "arguments": {}}, $(complete "add.sh adds")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/writes.jsonl"
submit_fresh writes "$R" ', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh && echo junk > gate-was-here && rm -f sub.sh README", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)" success "the item"
br=$(sql "SELECT branch FROM goals"); wt=$(sql "SELECT worktree FROM goals")
expect_eq "$(git -C "$R" diff --name-only "main..$br")" add.sh "the commit holds the item's change only"
expect_eq "$(git -C "$R" ls-tree --name-only "$br" | tr '\n' ' ')" "README add.sh sub.sh test.sh " "files on the branch"
[ ! -e "$wt/gate-was-here" ] && [ -f "$wt/README" ] && [ -f "$wt/sub.sh" ] || fail "the gate changed the worktree: $(ls -A "$wt")"; ok
expect_eq "$(git -C "$wt" status --porcelain)" "" "the worktree is clean after the commit"
expect_eq "$(ls "$T/goals/$GID" 2>/dev/null | grep -c gate-)" 0 "the gate copies are removed"
unset GOALD_LLM_SCRIPT

# ===== 5. a read-only goal: the model's gate never runs, nothing committed ===
R="$T/ro"; mkproj "$R"
cat >"$T/ro.jsonl" <<EOF
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["the report names the bug"], "allowed_actions": ["read"], "verification": [{"name": "pwn", "type": "custom", "command": "touch pwned; echo pwned > README", "must_pass": true}]}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Find the bug", "type": "analysis", "effort": "S", "critical": true, "depends_on": []}]}}
{"stage": "execute", "tool_calls": [{"name": "read", "arguments": {"path": "add.sh"}}, $(complete "add.sh subtracts: see add.sh")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/ro.jsonl"
submit_fresh ro "$R" ', "allowed_actions": ["read"]'
step plan
expect_eq "$(sql "SELECT verification||' '||json_extract(elaboration,'\$.verification_source') FROM goals")" "[] none" \
    "a read-only goal takes no gate from the model"
step plan; step work
expect_eq "$(jqo .status)" success "the analysis item"
br=$(sql "SELECT branch FROM goals"); wt=$(sql "SELECT worktree FROM goals")
expect_eq "$(git -C "$R" rev-list --count "main..$br")" 0 "no commit on the branch"
[ ! -e "$wt/pwned" ] && [ "$(cat "$wt/README")" = hello ] || fail "the model's command ran"; ok
expect_eq "$(git -C "$wt" status --porcelain)" "" "the worktree is unchanged"
expect_eq "$(sql "SELECT count(*) FROM gate_results")" 0 "no gate ran"
expect_eq "$(sql "SELECT ifnull(verified, 'NULL') FROM work_items")" 0 "unverified"

# ===== 6. protected_paths ======================================================
R="$T/prot"; mkproj "$R"
cat >"$T/prot.jsonl" <<EOF
{"stage": "elaborate", "content": $ELAB}
{"stage": "plan", "content": $(plan1 "Fix add.sh")}
{"stage": "execute", "tool_calls": [$(write test.sh 'exit 0\n')]}
{"stage": "execute", "tool_calls": [{"name": "bash", "arguments": {"command": "echo 'exit 0' > test.sh"}}, $(write add.sh '#!/bin/sh\necho $(($1 + $2))\n'), $(complete "done")]}
{"stage": "review", "content": $REVIEW}
EOF
export GOALD_LLM_SCRIPT="$T/prot.jsonl"
submit_fresh prot "$R" "$GATES"', "protected_paths": ["test.sh", "tests/"]'
step plan; step plan; step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/policy "a protected file changed with bash"
case "$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" in
    *"commit refused: test.sh is protected"*) ok ;; *) fail "reason: $(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" ;; esac
expect_eq "$(sql "SELECT json_extract(payload,'\$.error_class') FROM events WHERE type='tool_call.failed' AND json_extract(payload,'\$.tool')='write' ORDER BY id LIMIT 1")" policy \
    "write refuses a protected path"
expect_eq "$(git -C "$R" rev-list --count "main..$(sql "SELECT branch FROM goals")")" 0 "nothing committed"
printf '{"title":"x","repo":"%s","protected_paths":["/etc/passwd"]}' "$R" >"$T/bad.json"
run "$G" submit "$T/bad.json"
expect_rc 2 "a bad protected_paths"
expect_err "protected_paths[0]: expected a glob relative to the repository"

done_tests
