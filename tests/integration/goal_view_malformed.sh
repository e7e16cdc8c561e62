#!/usr/bin/env bash
# A goal's success criteria or elaboration that is not what goald wrote
# (a hand-edited database: JSON, which the schema checks, of another
# shape) fails the run when it starts, with one error naming the goal and
# the column, before any model call; the goal waits for a human (class
# config), and no stage guesses around it.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

make_repo "$T/r"
{
    echo "{\"content\": $ELAB}"
} >"$T/s.jsonl"
start_fake_llm gv openai "$T/s.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1

# the criteria an object, before elaboration
submit_fresh crit "$T/r" ', "success_criteria": ["tests pass"]'
sql "UPDATE goals SET success_criteria = '{\"tests pass\": \"yes\"}' WHERE id = '$GID'"
step plan
expect_eq "$(jqo .status)" failed "a run on a malformed success_criteria"
expect_eq "$(jqo .error_class)" config "its class"
expect_eq "$(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")" \
    "goal $GID: success_criteria: expected an array of strings" \
    "the reason names the goal and the column"
expect_eq "$(fake_requests)" 0 "no model call"

# a criterion that is not a string
submit_fresh num "$T/r" ', "success_criteria": ["tests pass"]'
sql "UPDATE goals SET success_criteria = '[\"tests pass\", 3]' WHERE id = '$GID'"
step plan
expect_eq "$(jqo .status)" failed "a run on a criterion that is not a string"
expect_eq "$(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")" \
    "goal $GID: success_criteria: element 1: expected a string" "the reason names the element"

# the elaboration a list, between elaboration and planning
submit_fresh elab "$T/r"
step plan; expect_eq "$(jqo .status)" success "elaborate"
expect_eq "$(fake_requests)" 1 "the elaboration's model call"
sql "UPDATE goals SET elaboration = '[\"components\"]' WHERE id = '$GID'"
step plan
expect_eq "$(jqo .status)" failed "a run on a malformed elaboration"
expect_eq "$(jqo .error_class)" config "its class"
expect_eq "$(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")" \
    "goal $GID: elaboration: expected an object" "the reason names the goal and the column"
expect_eq "$(fake_requests)" 1 "no plan call"
done_tests
