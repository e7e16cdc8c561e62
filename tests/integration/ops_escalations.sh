#!/usr/bin/env bash
# Escalations.  The agent's own ask_human question is
# shown verbatim with its context (the item, the last tool calls) in
# `goald escalations` and `goald report` (text and JSON); `resolve --action
# pause` reports the state it really leaves (a non-critical item's question
# leaves its goal active); a goal's open escalations are closed by the
# system, with the reason, when the goal is cancelled or completed.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

make_project "$T/repo"
question='Should add.sh also accept negative numbers? The README says nothing, test.sh checks 10 + -4, and changing the sign rules would break callers that rely on the old behaviour.'
jq -nc --arg q "$question" '
  {stage: "elaborate", content: {components: ["add.sh"], implicit_requirements: [], success_criteria: ["done"],
   allowed_actions: ["ls", "read", "bash", "ask_human"], verification: []}},
  {stage: "plan", content: {work_items: [{key: "wi-1", title: "decide on negative numbers",
   description: "ask", type: "code", effort: "S", critical: false, depends_on: []}]}},
  {stage: "execute", tool_calls: [{name: "read", arguments: {path: "test.sh"}}]},
  {stage: "execute", tool_calls: [{name: "ask_human", arguments: {question: $q}}]}' >"$T/ask.jsonl"
export GOALD_LLM_SCRIPT="$T/ask.jsonl"
goal_json "$T/repo" "a goal whose agent asks" >"$T/g.json"
submit_goal "$T/g.json"
gid=$GOAL_ID
run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once with an agent's question"
esc=$(sql "SELECT id FROM escalations WHERE status = 'open' AND type = 'ask_human'")
[ -n "$esc" ] || fail "no ask_human escalation"
ok

run "$G" escalations
expect_rc 0 "escalations"
# the question whole, wrapped at 80 columns: the same words, nothing cut
flat() { printf '%s' "$OUT" | sed 's/^ *//' | tr '\n' ' ' | tr -s ' '; }
case "$(flat)" in *"question: $question"*) ok ;; *) fail "escalations: the question verbatim lacks \"$question\": $OUT" ;; esac
[ "$(printf '%s\n' "$OUT" | max_cols)" -le 80 ] ||
    fail "escalations: a line over 80 columns: $OUT"; ok
expect_out "item wi-1: decide on negative numbers" "escalations: the item"
expect_out "called read" "escalations: the last tool call"
run "$G" escalations --json
expect_eq "$(jqo '.[0].packet.minimal_question')" "$question" "escalations --json: question"
expect_eq "$(jqo '.[0].packet.last_tool_calls[-1].tool')" read "escalations --json: last tool call"
# the call's arguments too (tool_call events store them as "arguments")
expect_eq "$(jqo '.[0].packet.last_tool_calls[-1].args | fromjson | .path')" test.sh \
    "escalations --json: last tool call's arguments"

run "$G" report "$gid"
expect_rc 0 "report"
case "$(flat)" in *"$question"*) ok ;; *) fail "report: the question verbatim lacks \"$question\": $OUT" ;; esac
expect_out "item wi-1: decide on negative numbers" "report: the item"
expect_out "called read {\"path\":\"test.sh\"}" "report: the last tool call and its arguments"
run "$G" report "$gid" --json
expect_eq "$(jqo '.escalations[0].question')" "$question" "report --json: question"
expect_eq "$(jqo '.escalations[0].context.item_key')" wi-1 "report --json: item"
expect_eq "$(jqo '.escalations[0].context.last_tool_calls[0].tool')" read "report --json: tool call"

# pause: the goal is active (the item is not critical), and pause says so
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$gid'")" active "goal of a non-critical question"
run "$G" resolve "$esc" --action pause
expect_rc 0 "pause"
expect_out "goal ${gid:0:8} is active" "pause reports the state it leaves"
expect_eq "$(sql "SELECT status FROM escalations WHERE id = '$esc'")" open "a paused escalation stays open"

# the goal is cancelled: its escalation is closed by the system, with the reason
run "$G" cancel "$gid"
expect_rc 0 "cancel"
expect_eq "$(sql "SELECT status || '|' || resolution || '|' || resolution_input FROM escalations WHERE id = '$esc'")" \
    "resolved|system|the goal was cancelled" "escalation of a cancelled goal"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'escalation.closed' AND json_extract(payload, '\$.escalation_id') = '$esc'")" \
    1 "escalation.closed event"
run "$G" escalations
expect_out "no open escalations" "nothing left open"

# a goal past its deadline completes: the deadline escalation closes with it
db_reset
script_generic 1 >"$T/s.jsonl"
export GOALD_LLM_SCRIPT="$T/s.jsonl"
goal_json "$T/repo" "a late goal" >"$T/g.json"
submit_goal "$T/g.json"
gid=$GOAL_ID
sql "UPDATE goals SET deadline_at = 1000 WHERE id = '$gid'"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once, late goal"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$gid'")" completed "late goal"
expect_eq "$(sql "SELECT type || '|' || status || '|' || resolution || '|' || resolution_input FROM escalations")" \
    "deadline|resolved|system|the goal was completed" "deadline escalation of a completed goal"
done_tests
