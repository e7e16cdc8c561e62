#!/usr/bin/env bash
# A forge that refuses the token (401) is never asked twice: the
# publish run fails with class auth, one escalation names the forge and the
# variable to fix, the goal waits on a human (daemon --once exits 3) with no
# blind retries (on cf28cf2: four publish runs, then a generic escalation).
# The rate-limit cases (Retry-After, a reset an hour away, a 403 with
# x-ratelimit-remaining 0) are in tests/unit/test_forge.c.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

submit_goal_forge_refuses

run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once: the goal waits on a human"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE kind = 'publish'")" 1 "publish runs (never retried blindly)"
expect_eq "$(sql "SELECT error_class FROM runs WHERE kind = 'publish'")" auth "the publish run's class"
# every request the forge got: the 401 answered once, never repeated
n401=$(jq -s '[.[] | select(.status == 401)] | length' "$FORGE_LOG")
expect_eq "$n401" 1 "requests answered 401"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'open'")" 1 "one escalation"
q=$(sql "SELECT packet FROM escalations WHERE status = 'open'")
case "$q" in *GOALD_FORGE_TOKEN*) ok ;; *) fail "the escalation does not name the variable: $q" ;; esac
case "$q" in *"$FORGE_URL"*) ok ;; *) fail "the escalation does not name the forge: $q" ;; esac
case "$q" in *"fix the model"*) fail "a forge refusal blamed on the model: $q" ;; *) ok ;; esac
expect_eq "$(sql "SELECT status FROM goals")" blocked "goal"
done_tests
