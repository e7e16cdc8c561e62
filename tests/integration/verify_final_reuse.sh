#!/usr/bin/env bash
# No gate runs twice on the same tree: the final check before publishing
# judges the must-pass gates on the branch head, whose tree is the last
# item's; a clean pass the item's run had on that very tree (passed at
# once: not flaky, not timed out) is cited, not run again.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
R="$T/tool"
mkdir -p "$R"
cp "$GOALD_SOURCE_DIR/share/demo-project/"* "$R/"
git -C "$R" init -q -b main && git -C "$R" add -A &&
    git -C "$R" -c user.email=t@e -c user.name=t commit -q -m init
FIX=$(jq -nc '{name: "edit", arguments: {path: "add.sh", old_text: "$(($1 - $2))", new_text: "$(($1 + $2))"}}')
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix add")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$FIX, $(complete "add.sh adds")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/s.jsonl"
export GOALD_LLM_SCRIPT="$T/s.jsonl"
submit_fresh reuse "$R" ', "success_criteria": ["sh test.sh exits 0"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'
step plan; step plan; step work
expect_eq "$(jqo .status)" success "the item"
ITEM_RUN=$RUN
runs_before=$(sql "SELECT count(*) FROM gate_results WHERE name = 'tests'")
step work
expect_eq "$(jqo .status)" success "publish"
expect_eq "$(sql "SELECT count(*) FROM gate_results WHERE name = 'tests'")" "$runs_before" "the final check ran no gate"
fc=$(sql "SELECT data FROM decisions WHERE kind = 'final_check' ORDER BY id DESC LIMIT 1")
expect_eq "$(printf '%s' "$fc" | jq -r '.gates[0] | "\(.gate) \(.passed) \(.reused_from_run)"')" "tests true $ITEM_RUN" \
    "the item's clean pass is cited"
expect_eq "$(printf '%s' "$fc" | jq -r '.gates[0].tree_id')" "$(git -C "$R" rev-parse "$(sql "SELECT branch FROM goals")^{tree}")" \
    "on the head's tree"
run "$G" report "$GID" --json
expect_eq "$(jqo .goal.status)/$(jqo .goal.partial)" completed/false "completed"
done_tests
