#!/usr/bin/env bash
# Every provider's protocol, exactly (tests/fakes/fake_llm checks what the
# real services check): a history from another provider sent to Anthropic
# (blank text blocks dropped, foreign tool ids normalised alike in the call
# and its result); the model's output limit learned from the error and
# remembered (not the parameter renamed); Anthropic's "input length and
# max_tokens exceed context limit" as context_length; answers cut at the
# output cap never used (one retry with a larger cap, else class
# truncated); refusals and content filters as class refused; thinking
# blocks sent back as they came.
. "$(dirname "$0")/lib.sh"
expect_contains() { case "$1" in *"$2"*) ok ;; *) fail "expected [$2] in [$1]" ;; esac; }

export OPENAI_API_KEY=sk-test-openai-0123456789abcdef
export ANTHROPIC_API_KEY=sk-ant-test-0123456789abcdef
export GOALD_LLM_MODEL=m1 GOALD_LLM_TIMEOUT_MS=3000
export GOALD_LLM_RETRY_BACKOFF_MS=20 GOALD_LLM_CONNECT_TIMEOUT_MS=1000

# scenario NAME [MODE]: the script on stdin, a fresh fake and database
scenario() {
    cat >"$T/$1.jsonl"
    start_fake_llm "$1" "${2:-openai}" "$T/$1.jsonl"
    export GOALD_LLM_PROVIDER="${2:-openai}" GOALD_LLM_BASE_URL="$FAKE_URL"
    db_reset
}
body() { jq -r "select(.n == $1) | .body | $2" "$FAKE_LOG"; }
errors() { sql "SELECT group_concat(json_extract(payload, '$.class'), ' ') FROM events WHERE type = 'llm.error'"; }
TOOLS='"tools":[{"name":"read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"write","parameters":{"type":"object"}}]'
printf '{"messages":[{"role":"user","content":"go"}],%s}' "$TOOLS" >"$T/go.json"

# --- 4. a history made elsewhere, sent to Anthropic --------------------------
# Kimi/vLLM-style ids (functions.read:0) fail Anthropic's ^[a-zA-Z0-9_-]+$;
# a blank assistant text and a blank user turn are refused as text blocks.
cat >"$T/foreign.json" <<J
{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"look"},
  {"role":"assistant","content":"\n\n","tool_calls":[{"id":"functions.read:0","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},
                                                  {"id":"functions_read_0","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]},
  {"role":"tool","tool_call_id":"functions.read:0","content":"A"},
  {"role":"tool","tool_call_id":"functions_read_0","content":"  "},
  {"role":"user","content":" \n "}],$TOOLS}
J
scenario foreign anthropic <<'S'
{"content":"fine","usage":{"input":10,"output":2}}
S
run "$G" llm chat --json --stage execute <"$T/foreign.json"
expect_rc 0 "a foreign history accepted by Anthropic"
expect_eq "$(fake_requests)" 1 "accepted at once"
expect_eq "$(body 1 '[.messages[1].content[].type] | join(",")')" "tool_use,tool_use" "no blank text block"
id0=$(body 1 '.messages[1].content[0].id')
id1=$(body 1 '.messages[1].content[1].id')
expect_eq "$(body 1 '.messages[2].content[0].tool_use_id')" "$id0" "the result's id is the call's"
expect_eq "$(body 1 '.messages[2].content[1].tool_use_id')" "$id1"
[[ "$id0" =~ ^[a-zA-Z0-9_-]+$ ]] || fail "id $id0 does not match the pattern"; ok
expect_eq "$id1" functions_read_0 "a valid id is kept"
[ "$id0" != "$id1" ] || fail "two ids became one: $id0"; ok
expect_eq "$(body 1 '.messages[2].content[1].content')" "(no output)" "a blank result gets words"
expect_eq "$(body 1 '.messages | length')" 3 "the blank user turn is dropped"

# the same history on a failover: the first model (OpenAI-shaped) fails
echo '{"status":401,"body":{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}}' >"$T/down.jsonl"
start_fake_llm down openai "$T/down.jsonl"
DOWN_URL=$FAKE_URL
scenario failover anthropic <<'S'
{"content":"from claude","usage":{"input":10,"output":2}}
S
GOALD_LLM_MODELS=$(printf '[{"provider":"openai","model":"m1","base_url":"%s"},{"provider":"anthropic","model":"claude-test","base_url":"%s"}]' "$DOWN_URL" "$FAKE_URL") \
    run "$G" llm chat --json --stage execute <"$T/foreign.json"
expect_rc 0 "failover to Anthropic with the foreign history"
expect_eq "$(jqo .message.content)" "from claude"
expect_eq "$(jqo .model_index)" 1

# --- 3. the model's output limit, learned and remembered --------------------
scenario alimit anthropic <<'S'
{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for claude-3-opus-20240229"}}}
{"content":"job 1"}
{"content":"job 2"}
S
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_rc 0 "Anthropic's output limit"
expect_eq "$(body 1 .max_tokens)" 8192
expect_eq "$(body 2 .max_tokens)" 4096 "asked again with the limit"
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_rc 0 "the next process"
expect_eq "$(fake_requests)" 3 "the next process asks once"
expect_eq "$(body 3 .max_tokens)" 4096 "the next process knows the limit"

scenario olimit <<'S'
{"status":400,"body":{"error":{"message":"max_tokens is too large: 8192. This model supports at most 4096 completion tokens, whereas you provided 8192.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}}
{"content":"job 1"}
{"content":"job 2"}
S
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_rc 0 "OpenAI's output limit"
expect_eq "$(body 2 .max_tokens)" 4096 "asked again with the limit"
expect_eq "$(body 2 'has("max_completion_tokens")')" false "the parameter is not renamed"
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_eq "$(fake_requests)" 3 "the next process asks once"
expect_eq "$(body 3 .max_tokens)" 4096

# --- 3. Anthropic's input + max_tokens over the window: context_length -----
scenario actx anthropic <<'S'
{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197611 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}}
S
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_rc 1
expect_eq "$(jqo .error.class)" context_length "input + max_tokens over the window"

# --- 2. a cut tool call is never used: once more with a larger cap ---------
scenario ocut <<'S'
{"tool_calls":[{"name":"write","arguments":"{\"path\":\"a.txt\",\"content\":\"abc"}],"finish_reason":"length","usage":{"input":100,"output":8192}}
{"tool_calls":[{"name":"write","arguments":{"path":"a.txt","content":"abcdef"}}],"usage":{"input":100,"output":9000}}
S
run "$G" llm chat --json --stage execute --run r-cut <"$T/go.json"
expect_rc 0 "a cut answer asked again"
expect_eq "$(jqo '.message.tool_calls[0].function.arguments | fromjson | .content')" abcdef
expect_eq "$(body 1 .max_tokens)" 8192
expect_eq "$(body 2 .max_tokens)" 16384 "the retry's cap: twice"
expect_eq "$(errors)" truncated
expect_eq "$(sql "SELECT json_extract(payload, '$.retry') FROM events WHERE type = 'llm.error'")" 1
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'llm.response' AND json_extract(payload, '$.finish_reason') = 'length'")" 1 \
    "the cut answer's tokens are accounted"

scenario ocut2 <<'S'
{"tool_calls":[{"name":"write","arguments":"{\"path\":\"a.txt\",\"content\":\"abc"}],"finish_reason":"length","usage":{"input":100,"output":8192},"repeat":0}
S
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_rc 1 "cut twice"
expect_eq "$(jqo .error.class)" truncated
expect_contains "$(jqo .error.message)" "cut at the output cap (max_tokens 16384"
expect_contains "$(jqo .error.message)" "none of its tool calls run"
expect_eq "$(fake_requests)" 2 "one retry, then truncated"

# Anthropic: stop_reason max_tokens with a tool_use (its input partial)
scenario acut anthropic <<'S'
{"tool_calls":[{"name":"write","arguments":{"path":"a.txt"}}],"finish_reason":"max_tokens","usage":{"input":100,"output":8192},"repeat":0}
S
run "$G" llm chat --json --stage execute <"$T/go.json"
expect_rc 1 "a partial tool_use is not run"
expect_eq "$(jqo .error.class)" truncated
expect_eq "$(body 2 .max_tokens)" 16384

# a cap that cannot grow (a 4k output limit learned): truncated at once
scenario nogrow anthropic <<'S'
{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for claude-3-opus-20240229"}}}
{"content":"partial","finish_reason":"max_tokens","usage":{"input":100,"output":4096},"repeat":0}
S
run "$G" llm chat --json --stage review <<<'{"messages":[{"role":"user","content":"review"}],"response_schema":{"type":"object"}}'
expect_rc 1 "no larger cap"
expect_eq "$(jqo .error.class)" truncated
expect_contains "$(jqo .error.message)" "no larger cap fits the model"
expect_eq "$(fake_requests)" 2 "never asked again with the same cap"

# --- 2. refusals and content filters: class refused -------------------------
scenario arefuse anthropic <<'S'
{"content":"I can't help with","finish_reason":"refusal","repeat":0}
S
run "$G" llm chat --json --stage plan <<<'{"messages":[{"role":"user","content":"plan"}],"response_schema":{"type":"object"}}'
expect_rc 1 "Anthropic's refusal"
expect_eq "$(jqo .error.class)" refused
expect_contains "$(jqo .error.message)" "the model refused: I can't help with"
scenario filtered <<'S'
{"content":"{\"verdict\": \"pa","finish_reason":"content_filter","repeat":0}
S
run "$G" llm chat --json --stage review <<<'{"messages":[{"role":"user","content":"review"}],"response_schema":{"type":"object"}}'
expect_rc 1 "a content filter with a partial answer"
expect_eq "$(jqo .error.class)" refused
expect_contains "$(jqo .error.message)" "content filter withheld the answer"
# a plain-text request (the doctor's round trip) gets the cut answer as it is
scenario plaincut <<'S'
{"content":"o","finish_reason":"length"}
S
run "$G" llm chat --json --stage doctor <<<'[{"role":"user","content":"say ok"}]'
expect_rc 0 "plain text: no retry"
expect_eq "$(jqo .finish_reason)" length

done_tests
