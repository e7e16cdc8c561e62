#!/usr/bin/env bash
# A whole goal against a fake that behaves like real models and
# local servers do (fake_llm --realistic): every answer's JSON inside prose
# and a ```json fence, tool arguments as objects instead of strings, tool
# calls without ids, no usage object; plus a refusal, a content-filter stop,
# and slow answers.  The goal still completes with its gate passing, the
# refused turn does not end up as "no JSON object" (it is class refused,
# asked again, never kept in the history), every tool call id the
# model saw is unique over the run, and no assistant message is re-sent
# with a null content and no tool calls.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_LLM_RETRY_BACKOFF_MS=1
repo="$T/repo"
make_project "$repo"
{
    # elaboration's first answer: a refusal (message.refusal, content null)
    echo '{"stage": "elaborate", "refusal": "I cannot help with modifying shell scripts."}'
    echo '{"stage": "elaborate", "content": {"components": ["add.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["read", "edit", "bash", "run_gates"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]}, "hang_ms": 300}'
    echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "make add.sh add", "description": "add.sh subtracts", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}'
    # execute: a refusal turn (the loop carries on), slow, a content-filter
    # stop with no text, then the work
    echo '{"stage": "execute", "refusal": "I would rather not touch add.sh."}'
    echo '{"stage": "execute", "tool_calls": [{"name": "read", "arguments": {"path": "add.sh"}}], "hang_ms": 500}'
    echo '{"stage": "execute", "content": "", "finish_reason": "content_filter"}'
    echo '{"stage": "execute", "tool_calls": [{"name": "edit", "arguments": {"path": "add.sh", "old_text": "$(($1 - $2))", "new_text": "$(($1 + $2))"}}, {"name": "run_gates", "arguments": {}}]}'
    echo '{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "add.sh adds now"}}]}'
    echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}}'
} >"$T/script.jsonl"
FAKE_LLM_ARGS=--realistic start_fake_llm realistic openai "$T/script.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=qwen2.5-coder:7b
goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' "sh test.sh" >"$T/goal.json"
submit_goal "$T/goal.json"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"
expect_eq "$(sql "SELECT status || ' ' || ifnull(verified, 'null') FROM work_items WHERE goal_id = '$GOAL_ID'")" "done 1" \
    "the item is done and verified"
# the refusal was read as one (and asked again), not as an answer without JSON
err=$(sql "SELECT json_extract(payload, '$.class') || ': ' || json_extract(payload, '$.message') FROM events WHERE type = 'llm.error' AND json_extract(payload, '$.stage') = 'elaborate' ORDER BY id LIMIT 1")
case "$err" in *"refused"*"cannot help"*) ok ;; *) fail "the refused run's error: $err" ;; esac
case "$err" in *"no JSON object"*) fail "a refusal read as a missing JSON object: $err" ;; *) ok ;; esac
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'llm.request' AND json_extract(payload, '$.stage') = 'elaborate'")" 2 \
    "elaboration asked again after the refusal"
# the refusal and the content filter inside the run were reported as such
# (class refused) and asked again: never kept in the history
expect_eq "$(sql "SELECT group_concat(json_extract(payload, '$.class'), ' ') FROM events WHERE type = 'llm.error' AND json_extract(payload, '$.stage') = 'execute'")" \
    "refused refused" "the execute refusal and content filter"
if grep -q 'I would rather not touch add.sh' <(jq -c '.body.messages[]? | select(.role == "assistant")' "$FAKE_LOG"); then
    fail "the execute refusal was sent back as the assistant's content"
fi
ok
# what goald sent back: unique tool call ids, never content null without tool calls
jq -c '.body.messages[]? | select(.role == "assistant")' "$FAKE_LOG" >"$T/assistant.jsonl"
[ -s "$T/assistant.jsonl" ] || fail "no assistant message was ever sent back"; ok
bad=$(jq -c 'select(.content == null and ((.tool_calls // []) | length) == 0)' "$T/assistant.jsonl" | head -1)
[ -z "$bad" ] || fail "an assistant message with null content and no tool calls: $bad"; ok
ids=$(jq -r '.body.messages[]? | select(.role == "assistant") | .tool_calls[]?.id' "$FAKE_LOG" | sort -u)
# the last request of the execute run: its history holds every call
jq -c 'select([.body.messages[]? | select(.role == "tool")] | length > 0)' "$FAKE_LOG" | tail -n1 >"$T/last_exec.json"
last=$(jq -r '.body.messages[]? | select(.role == "assistant") | .tool_calls[]?.id' "$T/last_exec.json")
[ -n "$last" ] || fail "no tool call ids in the last request"; ok
expect_eq "$(printf "%s\n" "$last" | wc -l)" 3 "tool calls in the execute history (read, edit, run_gates)"
expect_eq "$(printf '%s\n' "$last" | sort | uniq -d | wc -l)" 0 "duplicate tool call ids in one request"
for id in $last; do [ -n "$id" ] && [ "$id" != null ] || fail "an empty tool call id"; done; ok
: "$ids"
# every tool result answers a call of the same request
jq -e '[.body.messages[] | select(.role == "assistant") | .tool_calls[]?.id] as $c
    | [.body.messages[] | select(.role == "tool") | .tool_call_id] | all(. as $t | $c | index($t))' "$T/last_exec.json" >/dev/null ||
    fail "a tool result without its call in the last request"
ok
done_tests
