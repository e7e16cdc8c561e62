#!/usr/bin/env bash
# The criteria are said once: the elaboration's rewording of a criterion
# the goal gave ("ms('') still throws" for "ms('') throws", "node --test
# passes with the new tests under test/" for "node --test test/ passes") is not added
# as a new one, a genuinely new criterion is; the plan request lists the
# criteria once (not again inside the elaboration it shows) and without
# goald's bookkeeping (verification_source).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

make_repo "$T/r"
ANSWER='{"components": ["index.js"], "implicit_requirements": [], "success_criteria": ["ms(\"\") still throws, and ms(\"   \") returns undefined (not 0)", "node --test passes with the new tests under test/", "the readme shows a weeks example"], "allowed_actions": ["read", "edit"], "verification": []}'
{
    echo "{\"content\": $ANSWER}"
    echo "{\"content\": $(plan1 "Do it")}"
} >"$T/s.jsonl"
start_fake_llm crit openai "$T/s.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh crit "$T/r" ', "success_criteria": ["ms(\"\") throws, ms(\"   \") returns undefined", "node --test test/ passes"]'
step plan; expect_eq "$(jqo .status)" success "elaborate"
expect_eq "$(sql "SELECT success_criteria FROM goals")" \
    '["ms(\"\") throws, ms(\"   \") returns undefined","node --test test/ passes","the readme shows a weeks example"]' \
    "the restatements dropped (one more word at most), the new one kept"
step plan; expect_eq "$(jqo .status)" success "plan"
req=$(jq -r 'select(.headers["x-goald-stage"] == "plan") | .body.messages[1].content' "$FAKE_LOG")
expect_eq "$(printf '%s' "$req" | grep -o 'the readme shows a weeks example' | wc -l)" 1 "the plan request lists a criterion once"
case "$req" in *verification_source*) fail "the plan request shows verification_source: $req" ;; *) ok ;; esac
elab=$(jq -r 'select(.headers["x-goald-stage"] == "elaborate") | .body.messages[0].content' "$FAKE_LOG")
case "$elab" in *"never a given one reworded"*) ok ;; *) fail "the elaborate prompt does not say so: $elab" ;; esac
done_tests
