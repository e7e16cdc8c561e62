#!/usr/bin/env bash
# With no model configured, work stops at once instead of
# looping.  One job, one escalation naming the cause and the fix, the goal
# blocked, the config breaker open; `daemon --once` exits non-zero within
# 5 s; as a service, no more than one job in 10 s.  A changed configuration
# (a restart with a model) closes the breaker and the escalation (by the
# system, with the reason) and the work goes on; a 401 from the provider
# does the same with class auth, and `resolve --action retry` lets the
# next job through.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

echo '{"title": "a goal before any model is configured"}' >"$T/g.json"
submit_goal "$T/g.json"
g1=$GOAL_ID
submit_goal "$T/g.json"
g2=$GOAL_ID

# --- daemon --once: non-zero within 5 s, at most one job ----------------------
start=$(date +%s%N)
run timeout 20 "$G" daemon --once
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$RC" != 0 ] && [ "$RC" != 124 ] || fail "daemon --once: expected a non-zero exit of its own, got $RC"
ok
expect_rc 3 "daemon --once with no model"
[ "$ms" -lt 5000 ] || fail "daemon --once took ${ms} ms"
ok
expect_eq "$(sql "SELECT count(*) FROM runs")" 1 "jobs started"
expect_err "no model is configured" "daemon --once says why"
expect_out "${g1:0:8}" "summary names the first goal"
expect_out "${g2:0:8}" "summary names the second goal"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'open'")" 1 "one escalation"
q=$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations")
case "$q" in *"no model is configured: set GOALD_LLM_BASE_URL and GOALD_LLM_MODEL"*"goald doctor --llm"*) ok ;;
    *) fail "question does not name the cause and the fix: $q" ;; esac
case "$q" in *"refused the credentials"*) fail "generic question: $q" ;; *) ok ;; esac
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$g1'")" blocked "the goal of the failed job"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'config'")" open "config breaker"
expect_eq "$(sql "SELECT json_extract(packet, '\$.actions') FROM escalations")" '["retry","pause"]' \
    "actions offered for a goal's configuration escalation"

# a second --once with the same configuration starts nothing
run timeout 20 "$G" daemon --once
expect_rc 3 "daemon --once again"
expect_eq "$(sql "SELECT count(*) FROM runs")" 1 "jobs after a second --once"

# --- as a service: no more than one job over 10 s ------------------------------
db_reset
submit_goal "$T/g.json"
"$G" daemon >"$T/svc.log" 2>&1 &
dpid=$!
sleep 10
n=$(sql "SELECT count(*) FROM runs")
kill -TERM "$dpid"; wait "$dpid" || true
[ "$n" -le 1 ] || fail "service started $n jobs in 10 s"
ok
expect_eq "$(sql "SELECT count(*) FROM escalations")" 1 "service: one escalation"

# --- the configuration changes: breaker and escalation close, work goes on ------
script_generic 1 >"$T/s.jsonl"
export GOALD_LLM_SCRIPT="$T/s.jsonl"
run timeout 60 "$G" daemon --once
expect_rc 0 "daemon --once with a model configured"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal after the configuration changed"
expect_eq "$(sql "SELECT status || ' ' || resolution FROM escalations")" "resolved system" \
    "the escalation closed by the system"
expect_eq "$(sql "SELECT resolution_input FROM escalations")" "the model configuration changed" \
    "its reason"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'config'")" closed "breaker closed"
unset GOALD_LLM_SCRIPT

# --- a 401 from the provider: class auth, one job, resolve lets one through ------
db_reset
cat >"$T/auth.jsonl" <<'JSON'
{"status": 401, "body": {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}, "repeat": 0}
JSON
start_fake_llm llm openai "$T/auth.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m GOALD_LLM_API_KEY=sk-test-0123456789abcdef
submit_goal "$T/g.json"
submit_goal "$T/g.json"
run timeout 20 "$G" daemon --once
expect_rc 3 "daemon --once after a 401"
expect_eq "$(sql "SELECT count(*) FROM runs")" 1 "jobs after a 401"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'auth'")" open "auth breaker"
esc=$(sql "SELECT id FROM escalations WHERE status = 'open'")
q=$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations")
case "$q" in *"HTTP 401"*"Incorrect API key"*) ok ;; *) fail "auth question lacks the cause: $q" ;; esac
run "$G" resolve "$esc" --action retry
expect_rc 0 "resolve retry"
run timeout 20 "$G" daemon --once
expect_rc 3 "daemon --once after retry"
expect_eq "$(sql "SELECT count(*) FROM runs")" 2 "one more job after the human's retry"
done_tests
