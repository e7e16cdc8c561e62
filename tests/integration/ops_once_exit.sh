#!/usr/bin/env bash
# `daemon --once` exit codes.  0 when all work finished;
# 3 when work is left waiting on a human, with one line per waiting goal
# (goal id prefix, title, escalation id, question) within 80 columns; 1 when
# the daemon itself fails (a database it cannot open).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

# --- 0: everything finished ------------------------------------------------------
make_project "$T/repo"
script_generic 1 >"$T/s.jsonl"
export GOALD_LLM_SCRIPT="$T/s.jsonl"
goal_json "$T/repo" "finished goal" >"$T/g.json"
submit_goal "$T/g.json"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once, all finished"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"

# --- 3: an agent's question waits on a human ------------------------------------
db_reset
cat >"$T/ask.jsonl" <<'JSON'
{"stage":"elaborate","content":{"components":["x"],"implicit_requirements":[],"success_criteria":["done"],"allowed_actions":["ls","read","bash","ask_human"],"verification":[]}}
{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"decide the colour","description":"ask which colour","type":"code","effort":"S","critical":true,"depends_on":[]}]}}
{"stage":"execute","tool_calls":[{"name":"ask_human","arguments":{"question":"Which colour should the button be, red or blue? The style guide in docs/style.md names both and I cannot tell which applies."}}]}
{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"echo blue >> work.log"}},{"name":"complete","arguments":{"summary":"blue it is"}}]}
{"stage":"review","content":{"verdict":"pass","findings":[]}}
JSON
export GOALD_LLM_SCRIPT="$T/ask.jsonl"
goal_json "$T/repo" "A goal with a rather long title that has to be cut to fit" >"$T/g2.json"
submit_goal "$T/g2.json"
gid=$GOAL_ID
run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once, a question waits"
esc=$(sql "SELECT id FROM escalations WHERE status = 'open'")
[ -n "$esc" ] || fail "no open escalation"
ok
expect_eq "$(printf '%s\n' "$OUT" | grep -c .)" 1 "one summary line per waiting goal"
expect_out "${gid:0:8}" "summary: goal id prefix"
expect_out "A goal with a rather" "summary: title"
expect_out "${esc:0:8}" "summary: escalation id"
expect_out "Which colour should" "summary: the question"
w=$(printf "%s\n" "$OUT" | LC_ALL=C.UTF-8 wc -L)
[ "$w" -le 80 ] || fail "summary line of $w columns: $OUT"
ok
expect_err "1 goal left waiting on a human" "stderr says why"

# --- the human answers: the work finishes, exit 0 --------------------------------
run "$G" resolve "$esc" --action retry --input "blue"
expect_rc 0 "resolve"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once after the answer"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$gid'")" completed "goal after the answer"

# --- 1: the daemon fails ----------------------------------------------------------
mkdir -p "$T/dir.db"
run timeout 20 "$G" --db "$T/dir.db" daemon --once
expect_rc 1 "daemon --once on a folder as database"
done_tests
