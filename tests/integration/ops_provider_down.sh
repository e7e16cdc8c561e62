#!/usr/bin/env bash
# A goal-level escalation opened for a provider's outage
# (elaboration out of retries on HTTP 503) is closed by the system, with
# the reason, once the provider answers again - the next successful model
# call (here another goal's, the half-open probe of the breaker) - and its
# goal goes on; it is not left open until the goal ends.  The model that
# is down is not asked to analyse its own outage.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

# two attempts of one request each, at once, and the breaker opens at the
# second failure with no cooldown: the next claim is its probe
export GOALD_LLM_RETRY_MAX=0 GOALD_CONTROL_MAX_RETRIES=1 GOALD_CONTROL_BACKOFF_BASE_MS=0 \
    GOALD_BREAKER_THRESHOLD=2 GOALD_BREAKER_COOLDOWN_S=0
elab='{"content": {"components": ["x"], "implicit_requirements": [], "success_criteria": ["it is done"], "allowed_actions": ["ls", "read"], "verification": []}}'
cat >"$T/s.jsonl" <<JSON
{"status": 503, "body": {"error": {"message": "upstream unavailable", "type": "server_error"}}, "repeat": 2}
$elab
$elab
JSON
start_fake_llm llm openai "$T/s.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m

echo '{"title": "a goal while the provider is down"}' >"$T/a.json"
submit_goal "$T/a.json"
ga=$GOAL_ID
run timeout 60 "$G" daemon --once
expect_rc 3 "daemon --once while the provider is down"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'failed' AND error_class = 'provider_api'")" 2 \
    "failed elaborations"
expect_eq "$(fake_requests)" 2 "requests (no analysis asked of the model that is down)"
expect_eq "$(sql "SELECT type || ' ' || status || ' ' || ifnull(item_id, 'goal') FROM escalations")" \
    "provider_api open goal" "the outage's escalation"
esc=$(sql "SELECT id FROM escalations")
q=$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations")
case "$q" in *"HTTP 503"*"upstream unavailable"*"goes on once a model call succeeds again"*) ok ;;
    *) fail "the question does not say the cause and that it closes by itself: $q" ;; esac
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$ga'")" blocked "goal A while the provider is down"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'provider_api'")" open "provider_api breaker"

# the provider is back: another goal's elaboration is the breaker's probe
echo '{"title": "a goal once the provider is back"}' >"$T/b.json"
submit_goal "$T/b.json"
gb=$GOAL_ID
run "$G" claim --lane plan --json
expect_rc 0 "claim the probe"
expect_eq "$(jqo .goal_id)" "$gb" "the probe's goal (A is blocked)"
run "$G" job "$(jqo .run_id)" --json
expect_rc 0 "the probe's job"
expect_eq "$(jqo .status)" success "the probe"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'provider_api'")" closed "breaker after the probe"
expect_eq "$(sql "SELECT status || ' ' || resolution FROM escalations")" "resolved system" \
    "the outage's escalation, closed by the system"
expect_eq "$(sql "SELECT resolution_input FROM escalations")" \
    "the provider answers again: a model call succeeded" "its reason"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'escalation.closed' AND json_extract(payload, '\$.escalation_id') = '$esc'")" \
    1 "escalation.closed event"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$ga'")" queued "goal A, unblocked"

# and goal A goes on: its elaboration is claimed and succeeds
run "$G" claim --lane plan --json
expect_rc 0 "claim after the outage"
expect_eq "$(jqo .goal_id) $(jqo .kind)" "$ga elaborate" "goal A's elaboration"
run "$G" job "$(jqo .run_id)" --json
expect_eq "$(jqo .status)" success "goal A's elaboration"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$ga'")" active "goal A"
run "$G" escalations
expect_rc 0
case "$OUT" in *"${esc:0:8}"*) fail "the closed escalation is still listed: $OUT" ;; *) ok ;; esac
done_tests
