#!/usr/bin/env bash
# Anthropic's extended thinking through a whole goal: the execute turns
# answer thinking (and redacted_thinking) blocks with their tool_use, and
# tests/fakes/fake_llm (anthropic mode) answers 400 like the real service
# when the next request's assistant turn lacks them, changed or out of
# order.  The goal completes, and every block went back byte for byte,
# first in its turn.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_LLM_RETRY_BACKOFF_MS=1
export ANTHROPIC_API_KEY=sk-ant-test-0123456789abcdef
repo="$T/repo"
make_project "$repo"
# a thinking text with what escaping and re-encoding could change: quotes,
# backslashes, a tab, newlines, non-ASCII, an escaped slash
T1='Let me \"look\" at add.sh first.\n\tIt prints $(($1 - $2)) \\ maybe wrong; caf\u00e9 \u2192 fix \/ later.'
{
    echo '{"content": {"components": ["add.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["read", "edit", "bash", "run_gates"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "make add.sh add", "description": "add.sh subtracts", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}'
    echo '{"thinking": [{"thinking": "'"$T1"'", "signature": "EqQBCkYIARgCKkBsig1+/=="}, {"redacted": "EmwKAhgBEgy3redacted+data/=="}], "content": "Reading it.", "tool_calls": [{"name": "read", "arguments": {"path": "add.sh"}}]}'
    echo '{"thinking": [{"thinking": "It subtracts: make it add, then run the gates.", "signature": "EqQBCkYIARgCKkBsig2=="}], "tool_calls": [{"name": "edit", "arguments": {"path": "add.sh", "old_text": "$(($1 - $2))", "new_text": "$(($1 + $2))"}}, {"name": "run_gates", "arguments": {}}]}'
    echo '{"thinking": [{"thinking": "The gates pass.", "signature": "EqQBCkYIARgCKkBsig3=="}], "tool_calls": [{"name": "complete", "arguments": {"summary": "add.sh adds now"}}]}'
    echo '{"content": {"verdict": "pass", "findings": []}}'
} >"$T/script.jsonl"
start_fake_llm thinking anthropic "$T/script.jsonl"
export GOALD_LLM_PROVIDER=anthropic GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=claude-sonnet-4-20250514
goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' "sh test.sh" >"$T/goal.json"
submit_goal "$T/goal.json"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once"
bad=$(jq -r 'select(.n > 0) | .body.messages[]? | select(.role == "assistant") | .content[0].type' "$FAKE_LOG" | grep -v thinking | head -1)
expect_eq "$(sql "SELECT group_concat(json_extract(payload, '$.message'), ' | ') FROM events WHERE type = 'llm.error'")" "" \
    "no request refused ($bad)"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"
# the last execute request (before complete) holds the first two turns,
# each starting with its blocks exactly as the fake sent them
last=$(jq -c 'select([.body.messages[]? | select(.role == "assistant")] | length == 2)' "$FAKE_LOG" | tail -n1)
[ -n "$last" ] || fail "no request with the two execute turns"; ok
got=$(jq -c '[.body.messages[] | select(.role == "assistant") | .content[] | select(.type | test("thinking"))]' <<<"$last")
want=$(jq -c -s '[.[2, 3] | .thinking[] | if .redacted then {type: "redacted_thinking", data: .redacted} else {type: "thinking", thinking: .thinking, signature: .signature} end]' "$T/script.jsonl")
expect_eq "$got" "$want" "the thinking blocks went back unmodified, in order"
expect_eq "$(jq -r '[.body.messages[] | select(.role == "assistant")][0].content | map(.type) | join(",")' <<<"$last")" \
    "thinking,redacted_thinking,text,tool_use" "the first turn's blocks in their order"
expect_eq "$(jq -r '[.body.messages[] | select(.role == "assistant")][1].content | map(.type) | join(",")' <<<"$last")" \
    "thinking,tool_use,tool_use"
done_tests
