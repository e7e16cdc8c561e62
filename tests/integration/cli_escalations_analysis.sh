#!/usr/bin/env bash
# goald escalations (plain text) shows what the escalate stage made of an
# escalation: the root cause and the options with their pros and cons, as
# --json has them.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

flat() { printf '%s\n' "$OUT" | sed -E 's/^ +//' | tr '\n' ' ' | tr -s ' '; }

# --- from a real run: the agent asks, the escalate stage analyses it
make_project "$T/repo"
jq -nc '
  {stage: "elaborate", content: {components: ["x"], implicit_requirements: [], success_criteria: ["done"],
   allowed_actions: ["ls", "read", "ask_human"], verification: []}},
  {stage: "plan", content: {work_items: [{key: "wi-1", title: "decide the colour", description: "ask",
   type: "code", effort: "S", critical: true, depends_on: []}]}},
  {stage: "execute", tool_calls: [{name: "ask_human", arguments: {question: "Red or blue?"}}]}' >"$T/ask.jsonl"
export GOALD_LLM_SCRIPT="$T/ask.jsonl"
goal_json "$T/repo" "a question" >"$T/g.json"
submit_goal "$T/g.json"
run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once, a question waits"
run "$G" escalations --json
expect_rc 0 "escalations --json"
n=$(jqo '.[0].packet.analysis.options | length')
[ "$n" -ge 1 ] || fail "the analysis has no options: $OUT"; ok
opt=$(jqo '.[0].packet.analysis.options[0].option')
pros=$(jqo '.[0].packet.analysis.options[0].pros')
cons=$(jqo '.[0].packet.analysis.options[0].cons')
run "$G" escalations
expect_rc 0 "escalations"
expect_out "options:"
case "$(flat)" in *"$opt "*"pros: $pros"*"cons: $cons"*) ok ;;
*) fail "escalations: option $opt without its pros [$pros] and cons [$cons]: $OUT" ;; esac

# --- a model's analysis: its root cause, and every option's pros and cons
db_use model
echo '{"title": "a goal that failed"}' >"$T/g2.json"
run "$G" submit "$T/g2.json"; expect_rc 0 "submit"
gid=$OUT
sql "INSERT INTO escalations (id, goal_id, type, severity, packet, created_at) VALUES
     ('e5ca1a7e-0000-4000-8000-000000000002', '$gid', 'recovery_exhausted', 'critical',
      json_object('reason', 'recovery_exhausted', 'cause', 'gate make test failed',
        'minimal_question', 'Retry with the fix, or skip the item?',
        'actions', json_array('retry', 'skip'),
        'analysis', json_object('root_cause', 'the parser accepts a trailing comma since the last refactor',
          'minimal_question', 'Retry with the fix, or skip the item?',
          'options', json_array(
            json_object('option', 'retry', 'description', 'run the item again with the hint',
                        'pros', 'keeps the item', 'cons', 'costs another attempt', 'effort', 'S'),
            json_object('option', 'skip', 'description', 'leave the parser as it is',
                        'pros', 'no more cost', 'cons', 'the bug stays', 'effort', 'S')))),
      strftime('%s','now') * 1000)"
run "$G" escalations
expect_rc 0 "escalations"
case "$(flat)" in *"root cause: the parser accepts a trailing comma since the last refactor"*) ok ;;
*) fail "escalations: no root cause: $OUT" ;; esac
case "$(flat)" in *"retry run the item again with the hint pros: keeps the item cons: costs another attempt"*) ok ;;
*) fail "escalations: option retry incomplete: $OUT" ;; esac
case "$(flat)" in *"skip leave the parser as it is pros: no more cost cons: the bug stays"*) ok ;;
*) fail "escalations: option skip incomplete: $OUT" ;; esac
done_tests
