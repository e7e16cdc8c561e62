#!/usr/bin/env bash
# The anthropic provider against fake_llm --mode anthropic: headers, the
# system prompt apart, tool_use / tool_result blocks, cache usage, and the
# error types (rate_limit_error, overloaded_error, prompt too long).
. "$(dirname "$0")/lib.sh"

export ANTHROPIC_API_KEY=sk-ant-test-0123456789abcdef
export GOALD_LLM_PROVIDER=anthropic GOALD_LLM_MODEL=claude-test GOALD_LLM_RETRY_BACKOFF_MS=10
cat >"$T/req.json" <<'J'
{"messages":[{"role":"system","content":"you are terse"},
  {"role":"user","content":"list files"},
  {"role":"assistant","content":"looking","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]},
  {"role":"tool","tool_call_id":"toolu_1","content":"no such dir","is_error":true},
  {"role":"user","content":"try again"}],
 "tools":[{"name":"ls","description":"list","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]}
J
scenario() {
    cat >"$T/$1.jsonl"
    start_fake_llm "$1" anthropic "$T/$1.jsonl"
    export GOALD_LLM_BASE_URL="$FAKE_URL"
}
chat() { run "$G" llm chat --json "$@" <"$T/req.json"; }

scenario reply <<'S'
{"content":"two calls","tool_calls":[{"name":"ls","arguments":{"path":"src"}},{"name":"read","arguments":{"path":"README"}}],"usage":{"input":20,"cached_input":1000,"cache_write":50,"output":40}}
S
chat --stage execute --run r-1
expect_rc 0 "anthropic reply"
expect_eq "$(jqo .message.content)" "two calls"
expect_eq "$(jqo '.message.tool_calls | length')" 2
expect_eq "$(jqo '.message.tool_calls[1].function.arguments | fromjson | .path')" README
expect_eq "$(jqo .finish_reason)" tool_calls
expect_eq "$(jqo .usage.input)" 1070 "input + cache read + cache write"
expect_eq "$(jqo .usage.cached_input)" 1000
expect_eq "$(jqo .usage.cache_write)" 50
expect_eq "$(jqo .usage.output)" 40
L=$(head -1 "$FAKE_LOG")
expect_eq "$(jq -r '.path' <<<"$L")" /v1/messages
expect_eq "$(jq -r '.headers["x-api-key"]' <<<"$L")" "$ANTHROPIC_API_KEY"
expect_eq "$(jq -r '.headers["anthropic-version"]' <<<"$L")" 2023-06-01
expect_eq "$(jq -r '.headers.authorization' <<<"$L")" null
expect_eq "$(jq -r '.headers["x-goald-stage"] + " " + .headers["x-goald-run"]' <<<"$L")" "execute r-1"
expect_eq "$(jq -r '.body.system[0].text' <<<"$L")" "you are terse"
expect_eq "$(jq -c '.body.system[0].cache_control' <<<"$L")" '{"type":"ephemeral"}' "the system block is a cache breakpoint"
expect_eq "$(jq -c '.body.messages[-1].content[-1].cache_control' <<<"$L")" '{"type":"ephemeral"}' "the last message is a cache breakpoint"
expect_eq "$(jq -r '[.body.messages[].role] | join(",")' <<<"$L")" "user,assistant,user"
expect_eq "$(jq -r '.body.messages[1].content[1].type + " " + .body.messages[1].content[1].input.path' <<<"$L")" "tool_use ."
expect_eq "$(jq -r '.body.messages[2].content[0].type + " " + .body.messages[2].content[0].tool_use_id' <<<"$L")" "tool_result toolu_1"
expect_eq "$(jq -r '.body.messages[2].content[0].is_error' <<<"$L")" true
expect_eq "$(jq -r '.body.messages[2].content[1].text' <<<"$L")" "try again"
expect_eq "$(jq -r '.body.tools[0].input_schema.properties.path.type' <<<"$L")" string
expect_eq "$(jq -r '.body.max_tokens' <<<"$L")" 8192

scenario limits <<'S'
{"status":429,"headers":{"retry-after":"0"},"body":{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}}
{"status":529,"body":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}
{"content":"finally","usage":{"input":1,"output":1}}
S
chat --stage execute
expect_rc 0 "rate limit and overloaded retried"
expect_eq "$(jqo .message.content)" finally
expect_eq "$(sql "SELECT group_concat(json_extract(payload,'\$.class') || '/' || json_extract(payload,'\$.status'), ' ') FROM events WHERE type='llm.error'")" "rate_limit/429 provider_api/529"

scenario toolong <<'S'
{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}}
S
chat --stage execute
expect_rc 1 "prompt too long"
expect_eq "$(jqo .error.class)" context_length
expect_eq "$(fake_requests)" 1

scenario badreq <<'S'
{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}}
S
chat --stage execute
expect_rc 1 "a refused request"
expect_eq "$(jqo .error.class)" provider_api
expect_eq "$(fake_requests)" 1 "a 400 is not retried"

scenario noauth <<'S'
{"status":401,"body":{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}}
S
chat --stage execute
expect_rc 1; expect_eq "$(jqo .error.class)" auth

# a structured answer: schema in the system prompt, JSON from the text
scenario structured <<'S'
{"content":"Here you go: {\"verdict\": \"pass\", \"findings\": []} - done","usage":{"input":5,"output":5}}
S
echo '{"messages":[{"role":"user","content":"review"}],"response_schema":{"type":"object","properties":{"verdict":{"type":"string"}}}}' >"$T/sreq.json"
run "$G" llm chat --json --stage review <"$T/sreq.json"
expect_rc 0 "anthropic structured"
expect_eq "$(jqo .json.verdict)" pass
head -1 "$FAKE_LOG" | jq -r .body.system[0].text | grep -q '"verdict"' || fail "schema not in system"; ok

done_tests
