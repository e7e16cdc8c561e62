#!/usr/bin/env bash
# A key rotated to one of the same length (review of control.c): the
# configuration's fingerprint records only the key's length, so the auth
# breaker a refused key opened never saw the change and no job ever ran
# again.  A daemon start is the only way a new environment arrives: it
# closes the breaker and its escalation (by the system, with the reason),
# and the next job runs - here refused again, so the breaker reopens.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

cat >"$T/auth.jsonl" <<'JSON'
{"status": 401, "body": {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}, "repeat": 0}
JSON
start_fake_llm llm openai "$T/auth.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m GOALD_LLM_API_KEY=sk-test-0123456789abcdef
echo '{"title": "a goal whose key is refused"}' >"$T/g.json"
submit_goal "$T/g.json"
run timeout 20 "$G" daemon --once
expect_rc 3 "daemon --once after a 401"
expect_eq "$(sql "SELECT count(*) FROM runs")" 1 "jobs after a 401"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'auth'")" open "auth breaker"
q=$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations")
case "$q" in *"restart of the daemon retries"*) ok ;; *) fail "the question does not say a restart retries: $q" ;; esac

# the key rotated to another of the same length; the daemon restarts
export GOALD_LLM_API_KEY=sk-test-fedcba9876543210
[ ${#GOALD_LLM_API_KEY} = 24 ] || fail "the keys differ in length"
run timeout 20 "$G" daemon --once
expect_rc 3 "daemon --once after the restart (the new key is refused too)"
expect_eq "$(sql "SELECT count(*) FROM runs")" 2 "a job ran after the restart"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'resolved' AND resolution = 'system'
                  AND resolution_input LIKE 'the daemon restarted%'")" 1 "the first escalation closed by the system"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'circuit.closed'
                  AND json_extract(payload, '\$.reason') LIKE 'the daemon restarted%'")" 1 "circuit.closed at start"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'auth'")" open "the breaker after the new key's 401"
expect_eq "$(tail -n1 "$FAKE_LOG" | jq -r '.headers.Authorization // .headers.authorization')" \
    "Bearer sk-test-fedcba9876543210" "the key the provider saw last"
done_tests
