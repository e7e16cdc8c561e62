#!/usr/bin/env bash
# Text that explains a problem is wrapped, not cut at 80 columns: watch's
# last error, escalations' cause, daemon --once's closing lines; watch
# shows no last error for a goal that completed.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

flat() { printf '%s\n' "$1" | sed -E 's/^([0-9:.]{8} )?( {6,})//' | tr '\n' ' ' | tr -s ' '; }
max_cols() { printf '%s\n' "$1" | LC_ALL=C.UTF-8 wc -L; }
why='the gate "make test" failed: tests/test_parse.c:42 expected the parser to reject a trailing comma in the list of fields, got a valid document; the end of this sentence is the part that matters'

# --- watch: the last error of a goal waiting on a human, whole and wrapped
echo '{"title": "a goal that failed once"}' >"$T/g.json"
run "$G" submit "$T/g.json"; expect_rc 0 "submit"
gid=$OUT
sql "UPDATE goals SET status = 'blocked' WHERE id = '$gid'"
sql "INSERT INTO events (ts, goal_id, type, payload) VALUES
     (strftime('%s','now') * 1000, '$gid', 'run.failed', json_object('reason', '$why'))"
run "$G" watch --plain "$gid"
expect_rc 3 "watch of a blocked goal"
case "$(flat "$OUT")" in *"last error: run.failed: $why"*) ok ;; *) fail "watch: the last error is not whole: $OUT" ;; esac
[ "$(max_cols "$OUT")" -le 80 ] || fail "watch: lines over 80 columns: $OUT"; ok

# --- watch: a goal that completed shows no last error
sql "UPDATE goals SET status = 'completed' WHERE id = '$gid'"
run "$G" watch --plain "$gid"
expect_rc 0 "watch of a completed goal"
case "$OUT" in *"last error"*) fail "watch shows a completed goal's last error: $OUT" ;; esac
ok

# --- escalations: the cause whole, wrapped
sql "UPDATE goals SET status = 'blocked' WHERE id = '$gid'"
sql "INSERT INTO escalations (id, goal_id, type, severity, packet, created_at) VALUES
     ('e5ca1a7e-0000-4000-8000-000000000001', '$gid', 'recovery_exhausted', 'critical',
      json_object('reason', 'recovery_exhausted', 'cause', '$why',
                  'minimal_question', 'Retry, or skip the item?', 'actions', json_array('retry', 'skip')),
      strftime('%s','now') * 1000)"
run "$G" escalations
expect_rc 0 "escalations"
case "$(flat "$OUT")" in *"cause: $why"*) ok ;; *) fail "escalations: the cause is not whole: $OUT" ;; esac
[ "$(max_cols "$OUT")" -le 80 ] || fail "escalations: lines over 80 columns: $OUT"; ok

# --- daemon --once: a long question waiting on a human, whole on stderr
make_project "$T/repo"
q='Which colour should the button be, red or blue? The style guide in docs/style.md names both, and the last words of this question are the ones that decide it'
jq -nc --arg q "$q" '
  {stage: "elaborate", content: {components: ["x"], implicit_requirements: [], success_criteria: ["done"],
   allowed_actions: ["ls", "read", "ask_human"], verification: []}},
  {stage: "plan", content: {work_items: [{key: "wi-1", title: "decide the colour", description: "ask",
   type: "code", effort: "S", critical: true, depends_on: []}]}},
  {stage: "execute", tool_calls: [{name: "ask_human", arguments: {question: $q}}]}' >"$T/ask.jsonl"
export GOALD_LLM_SCRIPT="$T/ask.jsonl"
db_use once
goal_json "$T/repo" "a question" >"$T/g2.json"
submit_goal "$T/g2.json"
run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once, a question waits"
expect_eq "$(printf '%s\n' "$OUT" | grep -c .)" 1 "one summary line per waiting goal"
err=$(printf '%s\n' "$ERR" | grep -v '^goald\[')
case "$(flat "$err")" in *"${GOAL_ID:0:8}: $q"*) ok ;; *) fail "daemon --once: the question is not whole on stderr: $ERR" ;; esac
[ "$(max_cols "$err")" -le 80 ] || fail "daemon --once: lines over 80 columns: $err"; ok
done_tests
