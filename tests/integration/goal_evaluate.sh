#!/usr/bin/env bash
# The goal-level evaluation before publish (docs/verification.md, "The
# goal's evaluation"): a shell project whose gate `sh test.sh` backs the
# criterion "sh test.sh exits 0", and a criterion no gate can see ("the
# CHANGELOG has an entry for the fix").
#   1. the evaluate request holds the goal, the criteria with their
#      deterministic evidence, the items' summaries and the goal's diff; it
#      asks only about the changelog (the other names its passing gate);
#      the changelog judged unmet sends the goal back to planning once (a
#      new item, its key renamed from the taken wi-1); judged met after it,
#      the goal completes, not partial, with a (goal) review row in the
#      report and the pull request;
#   2. unmet again after a refused follow-up plan, served by a critical
#      item: escalation criteria_unmet (complete_partial or pause), the
#      goal blocked and nothing pushed; complete_partial publishes
#      [partial] reusing the verdict (no second evaluate call);
#   3. a criterion a passing gate backs only by a shared word ("the
#      addition is checked", gate `sh test.sh addition`) is asked about, and
#      the model's "unmet" never turns the gate: it stays met; a "met" whose
#      quote is no change of the diff (an unchanged line of add.sh shown as
#      context; there is no changelog) counts as unknown:
#      the changelog is unchecked, partial, with the reason, and no
#      follow-up plan.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=tool

repo() { # DIR: the demo project with a bare origin
    mkdir -p "$1"
    cp "$GOALD_SOURCE_DIR/share/demo-project/"* "$1/"
    git -C "$1" init -q -b main && git -C "$1" add -A &&
        git -C "$1" -c user.email=t@e -c user.name=t commit -q -m init
    git init -q --bare "$1.origin.git"
    git -C "$1" remote add origin "file://$1.origin.git"
}
item() { # KEY TITLE CRITERIA CRITICAL
    jq -nc --arg k "$1" --arg t "$2" --argjson c "$3" --argjson x "$4" \
        '{key: $k, title: $t, description: "", type: "code", priority: 50, effort: "S", critical: $x, depends_on: [], criteria: $c}'
}
plan() { jq -nc --argjson a "$1" '{work_items: [$a]}'; }
verdicts() { # V0 V1 [QUOTE1]: the evaluate answer for criteria 0 and 1
    jq -nc --arg a "$1" --arg b "$2" --arg q "${3:-CHANGELOG: no such file in the diff}" \
        '{criteria: [{index: 0, verdict: $a, quote: "+echo $(($1 + $2))"}, {index: 1, verdict: $b, quote: $q}]}'
}
FIX=$(jq -nc '{name: "edit", arguments: {path: "add.sh", old_text: "$(($1 - $2))", new_text: "$(($1 + $2))"}}')
goal() { # NAME REPO [CRITERION0 COMMAND]
    jq -n --arg repo "$2" --arg t "$1" --arg c0 "${3:-sh test.sh exits 0}" --arg cmd "${4:-sh test.sh}" '{title: $t, repo: $repo, base_branch: "main",
        success_criteria: [$c0, "the CHANGELOG has an entry for the fix"],
        verification: [{name: "tests", type: "test", command: $cmd, must_pass: true}],
        publish: {push: true, remote: "origin", pull_request: true}}' >"$T/$1.json"
    db_use "$1"
    run "$G" submit "$T/$1.json"; expect_rc 0 "submit $1"; GID=$OUT
}
calls() { jq -s --arg s "$1" '[.[] | select(.headers["x-goald-stage"] == $s)] | length' "$FAKE_LOG"; }

# --- 1. unmet -> one follow-up item -> met: completed ---------------------------
repo "$T/r1"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan "$(item wi-1 "Fix add" '[0, 1]' false)")}"
    jq -nc --argjson a "$FIX" --argjson c "$(complete "add.sh adds")" '{tool_calls: [$a, $c]}'
    echo "{\"content\": $REVIEW}"
    echo "{\"content\": $(verdicts met unmet)}"
    echo "{\"content\": $(plan "$(item wi-1 "Changelog entry" '[1]' false)")}"
    jq -nc --argjson a "$(write CHANGELOG 'Fixed: add.sh adds.
')" --argjson c "$(complete "CHANGELOG names the fix")" '{tool_calls: [$a, $c]}'
    echo "{\"content\": $REVIEW}"
    echo "{\"content\": $(verdicts met met '+Fixed: add.sh adds.')}"
} >"$T/one.jsonl"
start_fake_llm one openai "$T/one.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
goal one "$T/r1"
step plan; step plan; step work; expect_eq "$(jqo .status)" success "wi-1"
step work; expect_eq "$(jqo .status)" success "the first publish run (a follow-up plan)"
req=$(jq -r 'select(.headers["x-goald-stage"] == "evaluate") | .body.messages[1].content' "$FAKE_LOG" | head -c 100000)
case "$req" in *"0. sh test.sh exits 0"*"evidence: gate: gates passed: tests"*"1. the CHANGELOG has an entry for the fix"*"evidence: nothing deterministic"*) ok ;;
    *) fail "the evaluate request lacks the criteria and their evidence: $req" ;; esac
case "$req" in *"Judge the criteria with these indexes: 1"$'\n'*"- wi-1 Fix add: add.sh adds"*'+echo $(($1 + $2))'*) ok ;;
    *) fail "the evaluate request lacks the items or the diff: $req" ;; esac
run "$G" report "$GID" --json
expect_eq "$(jqo .goal.status)" active "the goal goes on working"
expect_eq "$(jqo '[.work_items[] | "\(.key):\(.status)"] | join(" ")')" "wi-1:done wi-1-2:ready" "a follow-up item, its key renamed"
expect_eq "$(forge_count POST /repos/acme/tool/pulls)" 0 "nothing published yet"
step work; expect_eq "$(jqo .status)" success "wi-1-2"
step work; expect_eq "$(jqo .status)" success "the second publish run"
run "$G" report "$GID" --json
expect_eq "$(jqo .goal.status)" completed "completed"
expect_eq "$(jqo .goal.partial)" false "not partial"
expect_eq "$(jqo '[.evidence[] | select(.item == null) | "\(.criterion):\(.kind):\(.verdict)"] | join(";")')" \
    "the CHANGELOG has an entry for the fix:review:met" "the evaluation's row"
expect_eq "$(jqo '.partial_reasons | length')" 0 "no partial reason"
expect_eq "$(calls evaluate)" 2 "two evaluations (one per head)"
expect_eq "$(calls plan)" 2 "one plan and one follow-up plan"
run "$G" events --goal "$GID" --json
expect_eq "$(jqo '[.[] | select(.type == "goal.replanned")] | length')" 1 "goal.replanned once"
body=$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/tool/pulls")][0].json.body' "$FORGE_LOG")
case "$body" in *"| the CHANGELOG has an entry for the fix | (goal) | review | evaluation: met:"*) ok ;;
    *) fail "the PR body lacks the evaluation's row: $body" ;; esac
run "$G" report "$GID"
expect_out "(goal)"

# --- 2. unmet, follow-up refused, critical: escalation; complete_partial -------
repo "$T/r2"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan "$(item wi-1 "Fix add" '[0, 1]' true)")}"
    jq -nc --argjson a "$FIX" --argjson c "$(complete "add.sh adds")" '{tool_calls: [$a, $c]}'
    echo "{\"content\": $REVIEW}"
    echo "{\"content\": $(verdicts met unmet)}"
    echo "{\"content\": $(plan "$(item wi-9 "Something else" '[0]' true)")}"
} >"$T/two.jsonl"
start_fake_llm two openai "$T/two.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
goal two "$T/r2"
step plan; step plan; step work; step work
expect_eq "$(jqo .status)" success "the publish run escalates"
run "$G" report "$GID" --json
expect_eq "$(jqo .goal.status)" blocked "the goal waits for a human"
expect_eq "$(jqo '[.work_items[].key] | join(" ")')" "wi-1" "the refused follow-up stored nothing"
run "$G" escalations --json
expect_eq "$(jqo '[.[] | select(.goal_id == "'"$GID"'")][0].type')" criteria_unmet "escalation type"
expect_eq "$(jqo '[.[] | select(.goal_id == "'"$GID"'")][0].packet.actions | join(",")')" "complete_partial,pause" "its actions"
case "$(jqo '[.[] | select(.goal_id == "'"$GID"'")][0].packet | .minimal_question // .analysis.minimal_question')" in *'criterion 1 "the CHANGELOG has an entry for the fix" is unmet'*) ok ;;
    *) fail "the question does not name the criterion: $OUT" ;; esac
ESC=$(jqo '[.[] | select(.goal_id == "'"$GID"'")][0].id')
run "$G" events --goal "$GID" --json
expect_eq "$(jqo '[.[] | select(.type == "goal.replan_failed")] | length')" 1 "goal.replan_failed"
expect_eq "$(git -C "$T/r2.origin.git" branch --list 'goald/*' | wc -l)" 0 "nothing pushed"
run "$G" resolve "$ESC" --action complete_partial; expect_rc 0 "resolve complete_partial"
step work; expect_eq "$(jqo .status)" success "publish after the human's decision"
run "$G" report "$GID" --json
expect_eq "$(jqo .goal.status)/$(jqo .goal.partial)" completed/true "completed, partial"
case "$(jqo '.partial_reasons[0]')" in *"is unmet"*) ok ;; *) fail "partial reason: $OUT" ;; esac
expect_eq "$(calls evaluate)" 1 "the verdict of the same head reused"
expect_eq "$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/tool/pulls")][-1].json.title' "$FORGE_LOG")" \
    "[partial] two" "the PR title"

# --- 3. a gate stands; unknown leaves the criterion unchecked -------------------
repo "$T/r3"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan "$(item wi-1 "Fix add" '[0, 1]' true)")}"
    jq -nc --argjson a "$FIX" --argjson c "$(complete "add.sh adds")" '{tool_calls: [$a, $c]}'
    echo "{\"content\": $REVIEW}"
    echo "{\"content\": $(verdicts unmet met ' # add.sh A B: print A + B')}"
} >"$T/three.jsonl"
start_fake_llm three openai "$T/three.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
goal three "$T/r3" "the addition is checked" "sh test.sh addition"
step plan; step plan; step work; step work
run "$G" report "$GID" --json
expect_eq "$(jqo .goal.status)/$(jqo .goal.partial)" completed/true "completed, partial"
expect_eq "$(jqo '[.evidence[] | select(.item == null) | "\(.kind):\(.status)"] | join(" ")')" \
    "review:met review:unchecked" "the gate's criterion stays met; the changelog is unchecked"
case "$(jqo '.partial_reasons | join(";")')" in *'criterion 1 "the CHANGELOG has an entry for the fix" is unchecked'*"quoted no change of the diff"*) ok ;;
    *) fail "partial reason: $OUT" ;; esac
expect_eq "$(jqo '.partial_reasons | length')" 1 "one reason"
expect_eq "$(calls plan)" 1 "no follow-up plan for an unchecked criterion"
run "$G" report "$GID"
expect_out "partial: criteria not proven"

done_tests
