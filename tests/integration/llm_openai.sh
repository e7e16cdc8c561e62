#!/usr/bin/env bash
# The openai provider against tests/fakes/fake_llm: replies, tool calls,
# headers, and every fault (429 + Retry-After, 500, hang, slow drip,
# malformed JSON, 10 MB body, wrong content type, 401, context length,
# refused response_format) with the right class, retry and failover.
. "$(dirname "$0")/lib.sh"

printf '[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]' >"$T/req.json"
export OPENAI_API_KEY=sk-test-openai-0123456789abcdef
export GOALD_LLM_PROVIDER=openai GOALD_LLM_MODEL=m1 GOALD_LLM_TIMEOUT_MS=1500
export GOALD_LLM_RETRY_BACKOFF_MS=20 GOALD_LLM_CONNECT_TIMEOUT_MS=1000

# scenario NAME: the script is on stdin; starts a fresh fake for it.
scenario() {
    cat >"$T/$1.jsonl"
    start_fake_llm "$1" openai "$T/$1.jsonl"
    export GOALD_LLM_BASE_URL="$FAKE_URL"
    db_reset
}
chat() { run "$G" llm chat --json "$@" <"$T/req.json"; }
ev_count() { sql "SELECT count(*) FROM events WHERE type = '$1'"; }

# --- a plain reply, usage with cached tokens, the headers -----------------
scenario plain <<'S'
{"content":"hello there","usage":{"input":120,"cached_input":100,"output":7,"reasoning":5}}
S
chat --stage review --run run-123
expect_rc 0 "plain reply"
json_ok
expect_eq "$(jqo .message.content)" "hello there"
expect_eq "$(jqo .usage.input)" 120
expect_eq "$(jqo .usage.cached_input)" 100
expect_eq "$(jqo .usage.output)" 7 "output tokens (reasoning not added again)"
expect_eq "$(jqo .finish_reason)" stop
expect_eq "$(jq -r '.headers["x-goald-stage"]' "$FAKE_LOG")" review
expect_eq "$(jq -r '.headers["x-goald-run"]' "$FAKE_LOG")" run-123
expect_eq "$(jq -r '.headers.authorization' "$FAKE_LOG")" "Bearer $OPENAI_API_KEY"
expect_eq "$(jq -r '.body.model' "$FAKE_LOG")" m1
expect_eq "$(jq -r '.body.messages[0].role' "$FAKE_LOG")" system
expect_eq "$(ev_count llm.request)" 1
expect_eq "$(ev_count llm.response)" 1
expect_eq "$(sql "SELECT json_extract(payload,'\$.tokens_cached') FROM events WHERE type='llm.response'")" 100

# --- several tool calls in one message; tools sent in the request ----------
scenario tools <<'S'
{"tool_calls":[{"name":"read","arguments":{"path":"a.c"}},{"name":"grep","arguments":{"pattern":"main"}}],"usage":{"input":50,"output":30}}
S
cat >"$T/treq.json" <<'J'
{"messages":[{"role":"user","content":"look"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
  {"role":"tool","tool_call_id":"c1","content":"a.c\n"}],
 "tools":[{"name":"read","description":"read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}},
          {"name":"grep","parameters":{"type":"object","properties":{"pattern":{"type":"string"}}}}]}
J
run "$G" llm chat --json --stage execute <"$T/treq.json"
expect_rc 0 "tool calls"
expect_eq "$(jqo '.message.tool_calls | length')" 2
expect_eq "$(jqo '.message.tool_calls[0].function.name')" read
expect_eq "$(jqo '.message.tool_calls[0].function.arguments | fromjson | .path')" a.c
expect_eq "$(jqo '.message.tool_calls[1].function.name')" grep
expect_eq "$(jqo .finish_reason)" tool_calls
expect_eq "$(jq -r '.body.tools | length' "$FAKE_LOG")" 2
expect_eq "$(jq -r '.body.tools[0].function.parameters.properties.path.type' "$FAKE_LOG")" string
expect_eq "$(jq -r '.body.messages[2].role' "$FAKE_LOG")" tool
expect_eq "$(jq -r '.body.messages[2].tool_call_id' "$FAKE_LOG")" c1
expect_eq "$(jq -r '.body.messages[1].tool_calls[0].function.name' "$FAKE_LOG")" ls

# --- 429 with Retry-After: waits, then succeeds on the same model ----------
scenario ratelimit <<'S'
{"status":429,"headers":{"Retry-After":"1"},"body":{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}}
{"content":"after the wait","usage":{"input":1,"output":1}}
S
t0=$(date +%s%N)
chat --stage execute
t1=$(date +%s%N)
expect_rc 0 "429 then ok"
expect_eq "$(jqo .message.content)" "after the wait"
expect_eq "$(fake_requests)" 2
[ $(( (t1 - t0) / 1000000 )) -ge 950 ] || fail "Retry-After 1 s not honoured: $(( (t1 - t0) / 1000000 )) ms"; ok
expect_eq "$(sql "SELECT json_extract(payload,'\$.class') || ' ' || json_extract(payload,'\$.retry_after_ms') || ' ' || json_extract(payload,'\$.retry') FROM events WHERE type='llm.error'")" "rate_limit 1000 1"

# --- 429 past the retry budget: fails with rate_limit --------------------
scenario ratelimit2 <<'S'
{"status":429,"headers":{"retry-after-ms":"10"},"body":{"error":{"message":"slow down","type":"rate_limit_error"}},"repeat":0}
S
GOALD_LLM_RETRY_RATE_LIMIT=2 chat --stage execute
expect_rc 1 "429 forever"
expect_eq "$(jqo .error.class)" rate_limit
expect_eq "$(jqo .error.status)" 429
expect_eq "$(fake_requests)" 3 "1 try + 2 retries"

# --- a Retry-After longer than llm.retry.retry_after_max_ms: next model at once --
scenario ratelimit3 <<'S'
{"status":429,"headers":{"Retry-After":"3600"},"body":{"error":{"message":"come back in an hour","type":"requests","code":"rate_limit_exceeded"}}}
{"content":"the other model","usage":{"input":1,"output":1}}
S
t0=$(date +%s%N)
GOALD_LLM_FALLBACK_MODEL=m2 chat --stage execute
t1=$(date +%s%N)
expect_rc 0 "long Retry-After fails over"
expect_eq "$(jqo .model_index)" 1
[ $(( (t1 - t0) / 1000000 )) -lt 3000 ] || fail "sat out a 1 h Retry-After"; ok
expect_eq "$(sql "SELECT json_extract(payload,'\$.retry') FROM events WHERE type='llm.error'")" 0

# --- a refused max_tokens: retried once with max_completion_tokens ----------
scenario maxtok <<'S'
{"status":400,"body":{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}}
{"content":"fine","usage":{"input":1,"output":1}}
S
chat --stage execute
expect_rc 0 "max_tokens fallback"
expect_eq "$(sed -n 1p "$FAKE_LOG" | jq -r '.body.max_tokens')" 8192
expect_eq "$(sed -n 2p "$FAKE_LOG" | jq -r '.body.max_tokens')" null
expect_eq "$(sed -n 2p "$FAKE_LOG" | jq -r '.body.max_completion_tokens')" 8192

# --- 500: exponential backoff, retries, then failover to the next model -----
scenario five <<'S'
{"status":500,"body":{"error":{"message":"boom","type":"server_error"}},"repeat":3}
{"content":"from the fallback","usage":{"input":3,"output":2}}
S
GOALD_LLM_FALLBACK_MODEL=m2 chat --stage plan_b
expect_rc 0 "500s then failover"
expect_eq "$(jqo .model_index)" 1
expect_eq "$(jqo .message.content)" "from the fallback"
expect_eq "$(fake_requests)" 4 "3 tries on m1, 1 on m2"
expect_eq "$(jq -r '.body.model' "$FAKE_LOG" | tr '\n' ' ')" "m1 m1 m1 m2 "
expect_eq "$(sql "SELECT json_extract(payload,'\$.from') || '>' || json_extract(payload,'\$.to') || ' ' || json_extract(payload,'\$.class') FROM events WHERE type='llm.failover'")" "m1>m2 provider_api"
expect_eq "$(ev_count llm.error)" 3

# --- a 503 with Retry-After: the wait is honoured for provider_api too ------
scenario unavailable <<'S'
{"status":503,"headers":{"Retry-After":"1"},"raw":"<html>Service Unavailable</html>","content_type":"text/html"}
{"content":"back","usage":{"input":1,"output":1}}
S
t0=$(date +%s%N)
chat --stage execute
t1=$(date +%s%N)
expect_rc 0 "503 then ok"
[ $(( (t1 - t0) / 1000000 )) -ge 950 ] || fail "503 Retry-After not honoured"; ok
expect_eq "$(sql "SELECT json_extract(payload,'\$.class') || ' ' || json_extract(payload,'\$.status') FROM events WHERE type='llm.error'")" "provider_api 503"

# --- a hang past the client timeout: class timeout, retried ---------------
scenario hang <<'S'
{"hang_ms":4000,"content":"too late"}
{"content":"in time"}
S
chat --stage execute
expect_rc 0 "hang then ok"
expect_eq "$(jqo .message.content)" "in time"
expect_eq "$(sql "SELECT json_extract(payload,'\$.class') FROM events WHERE type='llm.error'")" timeout
GOALD_LLM_RETRY_MAX=0 chat --stage execute   # the script is spent: fake answers 500
expect_rc 1

scenario hang2 <<'S'
{"hang_ms":4000,"content":"too late"}
S
GOALD_LLM_RETRY_MAX=0 chat --stage execute
expect_rc 1 "hang"
expect_eq "$(jqo .error.class)" timeout
expect_err "timeout"

# --- a slow drip that outlasts the total timeout ------------------------------
scenario drip <<'S'
{"content":"drip drip drip drip drip drip drip drip drip drip","drip_ms":400,"chunks":10}
S
GOALD_LLM_RETRY_MAX=0 chat --stage execute
expect_rc 1 "slow drip"
expect_eq "$(jqo .error.class)" timeout

# --- a fast drip is fine (chunked transfer) --------------------------------
scenario drip_ok <<'S'
{"content":"pieces","drip_ms":20,"chunks":5,"usage":{"input":1,"output":1}}
S
chat --stage execute
expect_rc 0 "fast drip"
expect_eq "$(jqo .message.content)" pieces

# --- malformed JSON: invalid_response, retried once ----------------------------
scenario malformed <<'S'
{"raw":"{\"choices\": [ {\"message\": ","repeat":2}
S
chat --stage execute
expect_rc 1 "malformed"
expect_eq "$(jqo .error.class)" invalid_response
expect_eq "$(fake_requests)" 2 "one retry"

# --- tool call arguments that are not JSON: invalid_response -------------------
scenario badargs <<'S'
{"tool_calls":[{"name":"read","arguments":"{path: oops"}],"repeat":2}
S
chat --stage execute
expect_rc 1 "bad arguments"
expect_eq "$(jqo .error.class)" invalid_response
expect_err "arguments are not a JSON object"

# --- a 10 MB body: invalid_response over the response cap, no crash ----------
# (the default cap follows the file cap: 2 x tools.max_file_mb + 1 MiB)
scenario big <<'S'
{"big_bytes":10485760,"repeat":2}
S
GOALD_TOOLS_MAX_FILE_MB=4 GOALD_LLM_TIMEOUT_MS=20000 chat --stage execute
expect_rc 1 "10 MB body"
expect_eq "$(jqo .error.class)" invalid_response
expect_err "larger than 9437184 bytes"

# --- a wrong content type ------------------------------------------------------
scenario ctype <<'S'
{"raw":"<html><body>Welcome to the captive portal</body></html>","content_type":"text/html","repeat":2}
S
chat --stage execute
expect_rc 1 "text/html"
expect_eq "$(jqo .error.class)" invalid_response
expect_err "unexpected content type text/html"

# --- 401: auth, never retried ------------------------------------------------
scenario unauth <<'S'
{"status":401,"body":{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}},"repeat":0}
S
chat --stage execute
expect_rc 1 "401"
expect_eq "$(jqo .error.class)" auth
expect_eq "$(fake_requests)" 1 "auth is not retried"

# --- context length: next model at once, no retry on the first -----------------
scenario ctx <<'S'
{"status":400,"body":{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}}
{"content":"bigger window","usage":{"input":9000,"output":3}}
S
GOALD_LLM_FALLBACK_MODEL=m2-long chat --stage execute
expect_rc 0 "context length failover"
expect_eq "$(jqo .model_index)" 1
expect_eq "$(fake_requests)" 2
expect_eq "$(sql "SELECT json_extract(payload,'\$.class') FROM events WHERE type='llm.failover'")" context_length

# --- a refused response_format: retried once without it, JSON from the text ----
scenario rf <<'S'
{"status":400,"body":{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}}
{"content":"Sure! Here it is:\n```json\n{\"strategy\": \"split the file\", \"reason\": \"too big\"}\n```","usage":{"input":10,"output":10}}
S
cat >"$T/sreq.json" <<'J'
{"messages":[{"role":"user","content":"another way?"}],
 "response_schema":{"type":"object","properties":{"strategy":{"type":"string"},"reason":{"type":"string"}},"required":["strategy","reason"]}}
J
run "$G" llm chat --json --stage plan_b <"$T/sreq.json"
expect_rc 0 "response_format fallback"
expect_eq "$(jqo .json.strategy)" "split the file"
expect_eq "$(fake_requests)" 2
expect_eq "$(sed -n 1p "$FAKE_LOG" | jq -r '.body.response_format.type')" json_schema
expect_eq "$(sed -n 1p "$FAKE_LOG" | jq -r '.body.response_format.json_schema.name')" plan_b
expect_eq "$(sed -n 2p "$FAKE_LOG" | jq -r '.body.response_format')" null
sed -n 2p "$FAKE_LOG" | jq -r '.body.messages[0].content' | grep -q '"strategy"' || fail "schema not in the first (system) message"; ok

# --- a structured answer that holds no JSON: invalid_response -----------------
scenario nojson <<'S'
{"content":"I would rather not.","repeat":2}
S
run "$G" llm chat --json --stage plan_b <"$T/sreq.json"
expect_rc 1 "no JSON in a structured answer"
expect_eq "$(jqo .error.class)" invalid_response
expect_eq "$(fake_requests)" 2

# --- nobody listening: provider_api ------------------------------------------
GOALD_LLM_BASE_URL=http://127.0.0.1:1/v1 GOALD_LLM_RETRY_MAX=1 run "$G" llm chat --json --stage execute <"$T/req.json"
expect_rc 1 "connection refused"
expect_eq "$(jqo .error.class)" provider_api

done_tests
