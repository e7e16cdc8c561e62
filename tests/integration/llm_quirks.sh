#!/usr/bin/env bash
# Servers' quirks against tests/fakes/fake_llm serving the exact
# shapes: a refusal, a null content re-sent, missing tool-call ids, an empty
# error result, a refused response_format, llama.cpp's and vLLM's context
# errors, vLLM's max_tokens too large, what an endpoint taught remembered
# across processes, Retry-After and x-ratelimit-reset-* (scaled), 401.
. "$(dirname "$0")/lib.sh"
expect_contains() { case "$1" in *"$2"*) ok ;; *) fail "expected [$2] in [$1]" ;; esac; }

export OPENAI_API_KEY=sk-test-openai-0123456789abcdef
export ANTHROPIC_API_KEY=sk-ant-test-0123456789abcdef
export GOALD_LLM_PROVIDER=openai GOALD_LLM_MODEL=m1 GOALD_LLM_TIMEOUT_MS=3000
export GOALD_LLM_RETRY_BACKOFF_MS=20 GOALD_LLM_CONNECT_TIMEOUT_MS=1000

scenario() {
    cat >"$T/$1.jsonl"
    start_fake_llm "$1" "${2:-openai}" "$T/$1.jsonl"
    export GOALD_LLM_BASE_URL="$FAKE_URL"
    db_reset
}
body() { jq -r "select(.n == $1) | .body | $2" "$FAKE_LOG"; }
SCHEMA='"response_schema":{"type":"object","properties":{"ok":{"type":"boolean"}}}'
printf '{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"answer"}],%s}' \
    "$SCHEMA" >"$T/schema.json"

# --- 1. a refusal is said as one, not "no JSON object" ----------------------
scenario refusal <<'S'
{"refusal":"I can't help with that request.","repeat":0}
S
run "$G" llm chat --json --stage plan <"$T/schema.json"
expect_rc 1 "a refusal fails the call"
expect_eq "$(jqo .error.class)" refused
expect_contains "$(jqo .error.message)" "the model refused: I can't help with that request."

# --- 1. an assistant turn without content nor tool calls is re-sent as "" --
scenario nullcontent <<'S'
{"content":"fine"}
S
printf '[{"role":"user","content":"a"},{"role":"assistant","content":null},{"role":"user","content":"again"}]' >"$T/null.json"
run "$G" llm chat --json --stage execute <"$T/null.json"
expect_rc 0 "null content history"
expect_eq "$(body 1 '.messages[1].content | type')" string "assistant content is a string"
expect_eq "$(body 1 '.messages[1].content')" ""

# --- 2. tool-call ids made up when missing: unique across turns ------------
scenario noids <<'S'
{"tool_calls":[{"name":"read","arguments":{"path":"a"}},{"name":"read","arguments":{"path":"b"}}],"omit_ids":true,"repeat":2}
S
printf '[{"role":"user","content":"look"}]' >"$T/look.json"
run "$G" llm chat --json --stage execute --run r1 <"$T/look.json"
expect_rc 0 "turn 1"
ids1=$(jqo '.message.tool_calls[].id')
run "$G" llm chat --json --stage execute --run r1 <"$T/look.json"
expect_rc 0 "turn 2"
ids2=$(jqo '.message.tool_calls[].id')
expect_eq "$(printf '%s\n%s\n' "$ids1" "$ids2" | grep -c .)" 4
expect_eq "$(printf '%s\n%s\n' "$ids1" "$ids2" | sort -u | grep -c .)" 4 "4 distinct ids over 2 turns: $ids1 $ids2"

# --- 2. an empty error tool_result gets a text (both APIs) -----------------
printf '[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"exec","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"","is_error":true}]' >"$T/emptyerr.json"
scenario emptyerr_a anthropic <<'S'
{"content":"ok"}
S
GOALD_LLM_PROVIDER=anthropic run "$G" llm chat --json --stage execute <"$T/emptyerr.json"
expect_rc 0 "anthropic empty error result"
expect_eq "$(body 1 '.messages[] | select(.role=="user") | .content[]? | select(.type=="tool_result") | .content')" "(no output)"
scenario emptyerr_o <<'S'
{"content":"ok"}
S
run "$G" llm chat --json --stage execute <"$T/emptyerr.json"
expect_rc 0 "openai empty error result"
expect_eq "$(body 1 '.messages[2].content')" "[tool error] (no output)"

# --- 3. response_format refused: one system message, first ----------------
scenario nofmt <<'S'
{"status":400,"body":{"error":{"message":"response_format is not supported","type":"invalid_request_error","param":"response_format"}}}
{"content":"{\"ok\":true}"}
S
run "$G" llm chat --json --stage plan <"$T/schema.json"
expect_rc 0 "response_format fallback"
expect_eq "$(body 2 '[.messages[].role] | join(",")')" "system,user"
expect_contains "$(body 2 '.messages[0].content')" "be brief"
expect_contains "$(body 2 '.messages[0].content')" "JSON schema"
expect_eq "$(body 2 'has("response_format")')" false

# --- 4. llama.cpp's exceed_context_size_error, vLLM's older body -----------
printf '[{"role":"user","content":"hi"}]' >"$T/hi.json"
scenario llamactx <<'S'
{"content":"never","ctx_error_bytes":10}
S
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 1 "llama.cpp context"
expect_eq "$(jqo .error.class)" context_length
scenario vllmctx <<'S'
{"status":400,"body":{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}
S
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 1 "vLLM context"
expect_eq "$(jqo .error.class)" context_length
expect_eq "$(fake_requests)" 1 "context_length is not retried"

# --- 4. vLLM's max_tokens too large: once more with what fits --------------
scenario vllmmax <<'S'
{"status":400,"body":{"object":"error","message":"'max_tokens' is too large: 8192. This model's maximum context length is 4096 tokens and your request has 1200 input tokens (8192 > 4096 - 1200). None","type":"BadRequestError","param":null,"code":400}}
{"content":"fits"}
S
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "max_tokens lowered"
expect_eq "$(jqo .message.content)" fits
expect_eq "$(body 1 .max_tokens)" 8192
expect_eq "$(body 2 .max_tokens)" 2880

# --- 4b. what fitted one request is not kept: the window is ----------------
# A near-full prompt leaves 30 tokens of room: that request gets them, but
# the next job is not capped by them for good (it was, and every later
# answer came back a few tokens long); it asks for a quarter of the 4096
# window the endpoint stated.
scenario vllmnear <<'S'
{"status":400,"body":{"object":"error","message":"'max_tokens' is too large: 8192. This model's maximum context length is 4096 tokens and your request has 4050 input tokens (8192 > 4096 - 4050). None","type":"BadRequestError","param":null,"code":400}}
{"content":"short"}
{"content":"next job"}
S
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "max_tokens lowered for a near-full prompt"
expect_eq "$(body 2 .max_tokens)" 30 "this request: the room it has"
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "the next job"
expect_eq "$(body 3 .max_tokens)" 1024 "the next job: a quarter of the window the endpoint stated"

# --- 5. what an endpoint taught is remembered by the next process ---------
scenario remember <<'S'
{"status":400,"body":{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}}
{"content":"job 1"}
{"content":"job 2"}
S
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "job 1"
expect_eq "$(body 2 'has("max_completion_tokens")')" true
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "job 2"
expect_eq "$(fake_requests)" 3 "job 2 asks once"
expect_eq "$(body 3 'has("max_completion_tokens")')" true "job 2 sends max_completion_tokens at once"
expect_eq "$(body 3 'has("max_tokens")')" false

# --- Retry-After: 5 waits 5 s, scaled by GOALD_TIME_SCALE -------------------
scenario ra5 <<'S'
{"status":429,"headers":{"Retry-After":"5"},"body":{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}}
{"content":"after the wait"}
S
GOALD_TIME_SCALE=0.1 run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "Retry-After 5"
gap=$(jq -s '.[1].t_ms - .[0].t_ms' "$FAKE_LOG")
[ "$gap" -ge 480 ] && [ "$gap" -lt 2500 ] || fail "Retry-After 5 at scale 0.1: waited $gap ms, want ~500"; ok

# --- x-ratelimit-reset-requests on a 429 without Retry-After ---------------
scenario xreset <<'S'
{"status":429,"headers":{"x-ratelimit-remaining-requests":"0","x-ratelimit-reset-requests":"6s","x-ratelimit-remaining-tokens":"1000","x-ratelimit-reset-tokens":"20ms"},"body":{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}}
{"content":"after the reset"}
S
GOALD_TIME_SCALE=0.1 run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 0 "x-ratelimit-reset-requests"
expect_eq "$(sql "SELECT json_extract(payload,'\$.retry_after_ms') FROM events WHERE type='llm.error'")" 6000
gap=$(jq -s '.[1].t_ms - .[0].t_ms' "$FAKE_LOG")
[ "$gap" -ge 580 ] && [ "$gap" -lt 3000 ] || fail "reset 6s at scale 0.1: waited $gap ms, want ~600"; ok

# --- 401: class auth, never retried ----------------------------------------
scenario unauth <<'S'
{"status":401,"body":{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}},"repeat":0}
S
run "$G" llm chat --json --stage execute <"$T/hi.json"
expect_rc 1 "401"
expect_eq "$(jqo .error.class)" auth
expect_eq "$(fake_requests)" 1 "a 401 is never retried"
done_tests
