#!/usr/bin/env bash
# What the model reads back from bash and run_gates inside a run (fake
# OpenAI model, daemon --once): a command that exits non-zero is a result
# (its output and exit code, no "[tool error]" label); /tmp does not last
# between two bash calls and the tool description says so; run_gates on a
# pass shows what the runner counted.  Also prints the size of the tools
# array of a request (TOOLS_BYTES=...).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

repo="$T/repo"
make_project "$repo"
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["sh test.sh exits 0"],"allowed_actions":["read","edit","bash","run_gates"],"verification":[]}}'
    echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"fix add.sh","description":"make it add","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]},{"key":"wi-2","title":"test 1 + 1","description":"one more case","type":"code","priority":40,"effort":"S","critical":true,"depends_on":["wi-1"]}]}}'
    echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"echo before-the-fix; sh test.sh"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"edit","arguments":{"path":"add.sh","old_text":"$(($1 - $2))","new_text":"$(($1 + $2))"}},{"name":"run_gates","arguments":{}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"add.sh adds"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
    echo '{"stage":"execute","tool_calls":[{"name":"edit","arguments":{"path":"test.sh","old_text":"check 0 0 0","new_text":"check 0 0 0\ncheck 1 1 2"}},{"name":"run_gates","arguments":{}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"one more case"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
} >"$T/script.jsonl"
start_fake_llm results openai "$T/script.jsonl"
goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' "sh test.sh" >"$T/goal.json"
submit_goal "$T/goal.json"
GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake \
    "$G" daemon --once --log-file "$T/daemon.log" >"$T/daemon.out" 2>"$T/daemon.err"
RC=$? OUT=$(cat "$T/daemon.out") ERR=$(cat "$T/daemon.err")
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"

# the tool results, as the model got them (OpenAI: role "tool" messages)
last=$(jq -c 'select(.body.messages | tostring | test("add.sh adds") | not) | .body' "$FAKE_LOG" |
    grep -F '"role":"tool"' | grep -F 'before-the-fix' | tail -n1)
[ -n "$last" ] || fail "no request carried tool results"; ok
results=$(jq -r '.messages[] | select(.role == "tool") | .content' <<<"$last")
# 1. the failing test run before the fix: output and exit code, no label
grep -qF 'before-the-fix' <<<"$results" || fail "the bash output is missing: $results"; ok
grep -qF 'not ok 1 - add 2 3' <<<"$results" || fail "the test output is missing: $results"; ok
grep -qF 'Command exited with code 1' <<<"$results" || fail "the exit code is missing: $results"; ok
case "$results" in *"[tool error]"*) fail "a non-zero exit was labelled a tool error: $results" ;; esac; ok
# 2. run_gates on a pass: the gate's line and what the runner counted
grep -qF 'gate tests (sh test.sh): PASS, exit 0' <<<"$results" || fail "no gate line: $results"; ok
grep -qF '  3 passed (tap)' <<<"$results" || fail "no test counts on a pass: $results"; ok
# 3. the second item's run_gates names the test case it added: the first
# item's passing gates are the baseline of the second
second=$(jq -c 'select(.body.tools and (.body.messages | tostring | test("check 1 1 2"))) | .body' \
    "$FAKE_LOG" | tail -n1)
results2=$(jq -r '.messages[] | select(.role == "tool") | .content' <<<"$second")
grep -qF '  4 passed (tap)' <<<"$results2" || fail "no counts in the second run_gates: $results2"; ok
grep -qF "  new since the item's start: add 1 1" <<<"$results2" ||
    fail "the new test case is not named: $results2"; ok
# 4. the bash description says what the sandbox allows
desc=$(jq -r '.tools[] | select(.function.name == "bash") | .function.description' <<<"$last")
for want in 'read-only' 'git stash' 'no network' 'git diff' '/tmp'; do
    grep -qiF -- "$want" <<<"$desc" || fail "the bash description lacks \"$want\": $desc"
done
ok
echo "TOOLS_BYTES=$(jq -c '.tools' <<<"$last" | tr -d '\n' | wc -c)"
done_tests
