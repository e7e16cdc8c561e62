#!/usr/bin/env bash
# A model the endpoint does not serve is a configuration error,
# not the provider's trouble.  OpenAI's 404 model_not_found, Ollama's
# 'model "x" not found' (its /v1 and its native shape) and Anthropic's 404
# not_found_error naming the model are class `config`: no retry, the
# config breaker opens, one escalation names the model and the fix
# (`goald doctor --llm`), `daemon --once` exits 3 at once.  A 404 that
# does not name a model (a wrong base_url path) stays `provider_api`.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

# doctor_class NAME MODE BODY-JSON: the class `goald doctor --llm` reports
doctor_line() {
    echo "{\"status\": 404, \"body\": $3, \"repeat\": 0}" >"$T/$1.jsonl"
    start_fake_llm "$1" "$2" "$T/$1.jsonl"
    if [ "$2" = anthropic ]; then
        run env GOALD_LLM_PROVIDER=anthropic GOALD_LLM_BASE_URL="${FAKE_URL%/v1}" \
            GOALD_LLM_MODEL=claude-x ANTHROPIC_API_KEY=sk-ant-test-0123456789 "$G" doctor --llm
    else
        run env GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=gpt-x "$G" doctor --llm
    fi
    LINE=$(printf '%s\n' "$OUT" | grep 'round trip failed' || true)
    expect_eq "$(fake_requests)" 1 "$1: requests (no retry of a 404)"
}
doctor_line openai openai '{"error": {"message": "The model `gpt-x` does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}'
case "$LINE" in *'config: the model "gpt-x" is unknown to '"$FAKE_URL"*'model_not_found'*'goald doctor --llm'*) ok ;;
    *) fail "openai model_not_found: $LINE" ;; esac
doctor_line ollama_v1 openai '{"error": {"message": "model \"gpt-x\" not found, try pulling it first", "type": "api_error", "param": null, "code": null}}'
case "$LINE" in *'config: the model "gpt-x" is unknown'*'try pulling it first'*) ok ;;
    *) fail "ollama /v1 model not found: $LINE" ;; esac
doctor_line ollama openai '{"error": "model '"'"'gpt-x'"'"' not found"}'
case "$LINE" in *'config: the model "gpt-x" is unknown'*) ok ;; *) fail "ollama model not found: $LINE" ;; esac
doctor_line anthropic anthropic '{"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}}'
case "$LINE" in *'config: the model "claude-x" is unknown'*'not_found_error'*) ok ;;
    *) fail "anthropic not_found_error: $LINE" ;; esac
doctor_line path openai '{"error": {"message": "404 page not found"}}'
case "$LINE" in *'provider_api: HTTP 404'*) ok ;; *) fail "a 404 naming no model: $LINE" ;; esac

# --- the daemon: one job, one escalation, the breaker open, exit 3 at once ------
cat >"$T/nf.jsonl" <<'JSON'
{"status": 404, "body": {"error": {"message": "The model `gpt-x` does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}, "repeat": 0}
JSON
start_fake_llm llm openai "$T/nf.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=gpt-x
echo '{"title": "a goal for a model that does not exist"}' >"$T/g.json"
submit_goal "$T/g.json"
g1=$GOAL_ID
submit_goal "$T/g.json"
start=$(date +%s%N)
run timeout 30 "$G" daemon --once
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_rc 3 "daemon --once with an unknown model"
[ "$ms" -lt 5000 ] || fail "daemon --once took ${ms} ms"
ok
expect_eq "$(sql "SELECT count(*) FROM runs")" 1 "jobs started"
expect_eq "$(fake_requests)" 1 "requests to the model (no retry, no analysis by the missing model)"
expect_eq "$(sql "SELECT error_class FROM runs")" config "the run's class"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'config'")" open "config breaker"
expect_eq "$(sql "SELECT count(*) FROM breakers WHERE error_class = 'provider_api'")" 0 "provider_api breaker"
expect_eq "$(sql "SELECT count(*) || ' ' || type FROM escalations WHERE status = 'open'")" "1 config" \
    "one escalation, of type config"
q=$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations")
case "$q" in *'the model "gpt-x" is unknown to '"$FAKE_URL"*'GOALD_LLM_MODEL'*'goald doctor --llm'*) ok ;;
    *) fail "the question does not name the model and the fix: $q" ;; esac
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$g1'")" blocked "the goal"
expect_err "is unknown to" "daemon --once says why"
run timeout 30 "$G" daemon --once
expect_rc 3 "daemon --once again, the same configuration"
expect_eq "$(sql "SELECT count(*) FROM runs")" 1 "jobs after a second --once"
done_tests
