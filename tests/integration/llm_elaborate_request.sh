#!/usr/bin/env bash
# What elaboration shows the model, it accepts: the goal's gates carry
# timeout_s, and the answer's schema (strict decoding) allows it in a gate;
# and the request says the goal's own gates are used as they are (the
# model's verification is not, so it need not guess one).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

R="$T/repo"
make_repo "$R"
ANSWER='{"components": ["README"], "implicit_requirements": [], "success_criteria": ["README says hello"], "allowed_actions": ["read", "edit"], "verification": [{"name": "tests", "type": "test", "command": "true", "must_pass": true, "timeout_s": 60}]}'
echo "{\"content\": $ANSWER}" >"$T/elab.jsonl"
start_fake_llm elab openai "$T/elab.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh elab "$R" ', "verification": [{"name": "tests", "type": "test", "command": "true", "must_pass": true, "timeout_s": 60}]'
step plan
expect_eq "$(jqo .status)" success "elaboration"
req=$(jq -c 'select(.headers["x-goald-stage"] == "elaborate") | .body' "$FAKE_LOG" | head -n1)
expect_eq "$(printf '%s' "$req" | jq -r '.response_format.json_schema.schema.properties.verification.items.properties | has("timeout_s")')" \
    true "the schema allows timeout_s, as the goal's gates show it"
case "$(printf '%s' "$req" | jq -r '.messages[1].content')" in
    *"the goal's own gates are used as they are"*'"timeout_s":60'*) ok ;;
    *) fail "the request does not say the goal's gates are used as they are: $req" ;; esac
done_tests
