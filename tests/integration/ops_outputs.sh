#!/usr/bin/env bash
# Outputs.
#   A. the daemon's JSON log: no key twice (pid once), integers as numbers
#   B. read-only commands never create a database or its folder; status
#      exits 3 when the daemon is not running
#   C. one JSON convention for every --json output (no duplicate keys,
#      numbers as numbers, RFC 3339 times with milliseconds)
#   D. every human-readable output fits 80 columns (--help of every
#      command, config show, escalations, events, goals, goal show, report,
#      status) with long fields cut or wrapped
#   E. submit reports every error at once; a past deadline is warned about
#   F. docs/cli.md is generated from the command table and current
. "$(dirname "$0")/lib.sh"
JC="$GOALD_SOURCE_DIR/tests/fixtures/json_convention.py"

LONG="a goal whose title is long enough to overflow any eighty column terminal line by itself alone"
S="$T/s.jsonl"
cat >"$S" <<EOF
{"stage": "elaborate", "content": {"components": ["notes"], "implicit_requirements": [], "success_criteria": ["notes exist"], "allowed_actions": ["write", "complete", "ask_human"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Write the note with a title that is much too long for one line", "description": "", "type": "doc", "priority": 80, "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Ask", "description": "", "type": "doc", "priority": 70, "effort": "M", "critical": true, "depends_on": ["wi-1"]}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "note.txt", "content": "hi"}}]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "written"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
{"stage": "execute", "tool_calls": [{"name": "ask_human", "arguments": {"question": "which of the three proposed layouts for the notes should be used, and should the headings be numbered?"}}]}
EOF
export GOALD_LLM_MODELS="[{\"provider\":\"script\",\"model\":\"m1\",\"script\":\"$S\"}]"
jq -n --arg t "$LONG" '{title: $t, deadline: "2099-01-01T00:00:00Z"}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit
GID=$OUT

# --- A: the JSON log ------------------------------------------------------------
run "$G" daemon --once --log-file "$T/d.log"; expect_rc 3 "daemon --once (wi-2 waits on a human)"
[ "$(grep -c . "$T/d.log")" -ge 4 ] || fail "few log lines: $(cat "$T/d.log")"; ok
python3 "$JC" log --lines <"$T/d.log" || fail "the JSON log breaks the convention"
ok
expect_eq "$(jq -s '[.[] | select(.event == "job.started")] | length' "$T/d.log")" 4 "job.started lines"
expect_eq "$(jq -s '[.[] | select(.event == "job.started") | (.pid | type), (.job_pid | type), (.attempt | type)] | unique | join(",")' "$T/d.log")" \
    '"number"' "pid, job_pid and attempt are numbers"
expect_eq "$(jq -s '[.[] | select(.event == "job.finished") | .duration_ms | type] | unique | join(",")' "$T/d.log")" \
    '"number"' "duration_ms is a number"
expect_eq "$(jq -s -r '[.[] | select(.event == "job.started") | .job_pid != .pid] | all' "$T/d.log")" true \
    "the job's pid is its own key"

# --- B: read-only commands create nothing -----------------------------------------
NODB="$T/nowhere/sub/g.db"
for cmd in "goals" "goals --json" "goal show $GID" "report $GID" "report $GID --json" "events" \
           "events --json" "escalations" "escalations --json" "status" "status --json" "watch"; do
    # shellcheck disable=SC2086
    run "$G" --db "$NODB" $cmd
    expect_rc 1 "$cmd on a missing database"
    expect_err "no database at $NODB"
    [ ! -e "$T/nowhere" ] || fail "$cmd created $T/nowhere"
    ok
done
run env GOALD_DB="$T/missing.db" "$G" goals
expect_rc 1 "GOALD_DB missing"
[ ! -e "$T/missing.db" ] || fail "goals created \$GOALD_DB"; ok
run "$G" status; expect_rc 3 "status without a daemon"
expect_out "daemon     not running"
run "$G" status --json; expect_rc 3 "status --json without a daemon"
expect_eq "$(jqo .daemon.state)" "not running"

# --- C: one JSON convention ---------------------------------------------------------
ITEM=$(sql "SELECT key FROM work_items WHERE status = 'done' LIMIT 1")
check_json() { # NAME CMD...
    local name=$1; shift
    run "$@"
    [ "$RC" = 0 ] || [ "$RC" = 3 ] || [ "$name" = doctor ] || fail "$name: exit $RC: $ERR"
    printf '%s' "$OUT" | python3 "$JC" "$name" || fail "$name breaks the JSON convention"
    ok
}
check_json goals "$G" goals --json
check_json "goal show" "$G" goal show "$GID" --json
check_json report "$G" report "$GID" --json
check_json "report --item" "$G" report "$GID" --json --item "$ITEM"
check_json events "$G" events --json
check_json escalations "$G" escalations --all --json
check_json status "$G" status --json
check_json "config show" "$G" config show --json
check_json doctor "$G" doctor --json
expect_eq "$(jq -r .deadline <<<"$("$G" goal show "$GID" --json)")" "2099-01-01T00:00:00.000Z" "times with milliseconds"

# --- D: 80 columns --------------------------------------------------------------
fits() { # NAME CMD...: stdout fits 80 columns
    local name=$1; shift
    run "$@"
    [ "$(printf '%s\n' "$OUT" | max_cols)" -le 80 ] ||
        fail "$name: a line over 80 columns: $(printf '%s\n' "$OUT" | long_lines 80 | head -3)"
    ok
}
fits "goald --help" "$G" --help
for cmd in $("$G" cli reference | sed -n 's/^### `goald \([a-z]*\( [a-z]*\)\?\).*/\1/p' | tr ' ' '+'); do
    # shellcheck disable=SC2046
    fits "${cmd/+/ } --help" "$G" $(echo "$cmd" | tr '+' ' ') --help
done
fits "config show" "$G" config show
fits escalations "$G" escalations
fits "escalations --all" "$G" escalations --all
fits events "$G" events
fits goals "$G" goals
fits "goal show" "$G" goal show "$GID"
fits report "$G" report "$GID"
fits status "$G" status
# long fields are cut with an ellipsis, not dropped
run "$G" escalations; expect_out "question:"; expect_out "which of the three proposed layouts"; expect_out "…"
run "$G" goals; expect_out "a goal whose title is long enou…"
run "$G" goal show "$GID"; expect_out "title             a goal whose title is long enough to overflow any eighty
                  column terminal line by itself alone"

# --- E: submit reports every error at once; a past deadline ---------------------------
before=$(sql "SELECT count(*) FROM goals")
printf '{"title": "", "priority": 500, "bogus": 1, "budget": {"max_tokens": -1},
  "deadline": "soon", "verification": [{"name": "a"}, {"command": "b"}], "allowed_actions": ["fly"]}' >"$T/bad.json"
run "$G" submit "$T/bad.json"
expect_rc 2 "bad goal"
expect_eq "$(printf '%s\n' "$ERR" | grep -c '^goald: ')" 8 "one message per error"
# every error fits 80 columns, continuation lines indented under it
expect_eq "$(printf '%s\n' "$ERR" | long_lines 80)" "" "submit's errors wider than 80 columns"
[ "$(printf '%s\n' "$ERR" | grep -vc '^goald: \|^       [^ ]')" = 0 ] ||
    fail "a line of submit's errors is neither a message nor its indented continuation: $ERR"
ok
expect_err "allowed_actions[0]: unknown action"
for m in "bad.json: bogus: unknown key" "bad.json: title: must not be empty" \
         "bad.json: priority: expected an integer from 0 to 100, got 500" \
         "bad.json: budget.max_tokens: expected a positive integer, got -1" \
         "bad.json: deadline: expected an RFC 3339 date-time" \
         "bad.json: verification[0].command: required" "bad.json: verification[1].name: required" \
         "bad.json: allowed_actions[0]: unknown action"; do
    expect_err "goald: $T/$m"
done
expect_eq "$(sql "SELECT count(*) FROM goals")" "$before" "nothing stored"
echo '{"title": "late", "deadline": "2020-01-01T00:00:00Z"}' >"$T/late.json"
run "$G" submit "$T/late.json"
expect_rc 0 "a past deadline is accepted"
expect_err "goald: warning: $T/late.json: deadline: 2020-01-01T00:00:00Z is in the past: the goal will be escalated as overdue at once"

# --- F: docs/cli.md, from the command table -------------------------------------------
"$G" cli reference >"$T/cli.md"
diff -u "$GOALD_SOURCE_DIR/docs/cli.md" "$T/cli.md" >"$T/cli.diff" ||
    fail "docs/cli.md is out of date: run goald cli reference > docs/cli.md ($(head -c 600 "$T/cli.diff"))"
ok
n=0
for cmd in $("$G" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z]\+\( [a-z]\+\)\?\) .*/\1/p' | tr ' ' '+'); do
    grep -q "^### \`goald ${cmd/+/ }" "$GOALD_SOURCE_DIR/docs/cli.md" || fail "docs/cli.md lacks ${cmd/+/ }"
    n=$((n + 1))
done
[ "$n" -ge 17 ] || fail "only $n commands in goald --help"; ok
for c in goals "goal show" report events escalations status "config show"; do
    grep -A20 "^### \`goald $c" "$GOALD_SOURCE_DIR/docs/cli.md" | grep -q '^`--json`: ' || fail "docs/cli.md: no --json shape for $c"
    ok
done
done_tests
