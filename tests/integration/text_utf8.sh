#!/usr/bin/env bash
# Text is valid UTF-8 on every backend: a goal whose gate prints invalid
# bytes (0xff, 0xfe) and whose bash tool prints some too completes; what
# is stored holds U+FFFD and a note saying how many bytes were replaced,
# never the raw bytes.  Run on SQLite (integration.text_utf8) and on
# PostgreSQL (pg.integration.text_utf8), which refused such a text (the
# gate's result could not be written and the goal blocked).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

make_project "$T/repo"
# the gate passes and prints one 0xff byte
printf '#!/bin/sh\nprintf "ok 1 - bytes \\377 here\\n"\n' >"$T/repo/gate.sh"
git -C "$T/repo" add gate.sh
git -C "$T/repo" commit -q -m "a gate printing a 0xff byte"

cat >"$T/s.jsonl" <<'JSON'
{"stage":"elaborate","content":{"components":["work.log"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["ls","read","edit","bash","run_gates"],"verification":[]}}
{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"log a line","description":"append a line","type":"code","effort":"S","critical":true,"depends_on":[]}]}}
{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"printf 'tool \\376\\377 out\\n'; echo line >> work.log"}},{"name":"complete","arguments":{"summary":"appended a line"}}]}
{"stage":"review","content":{"verdict":"pass","findings":[]}}
JSON
export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1
goal_json "$T/repo" "a gate that prints a 0xff byte" '{"push": false, "pull_request": false}' \
    "sh gate.sh" >"$T/g.json"
submit_goal "$T/g.json"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once: the goal finished"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"
expect_eq "$(sql "SELECT status FROM work_items")" done "item"

# the gate's tail: U+FFFD and the note, no raw byte
tail=$(sql "SELECT output_tail FROM gate_results WHERE name = 'tests' ORDER BY id DESC LIMIT 1")
case "$tail" in *"bytes �"*"[goald: 1 invalid UTF-8 byte replaced]"*) ok ;;
    *) fail "gate output tail: $tail" ;; esac
# a tool's output, as the model sees it: valid, with its note
run "$G" tool bash --root "$T/repo" --args '{"command": "printf '"'"'a \\376\\377 b\\n'"'"'"}'
expect_rc 0 "goald tool bash"
expect_out "a �� b"
expect_out "[goald: 2 invalid UTF-8 bytes replaced]"
if [ -z "${GOALD_TEST_PG:-}" ]; then
    # nothing stored holds an invalid byte (SQLite keeps what it is given)
    sqlite3 "$GOALD_DB" .dump >"$T/dump.sql"
    if LC_ALL=C grep -q $'\xff\|\xfe' "$T/dump.sql"; then fail "a raw invalid byte is stored"; fi
    ok
fi
done_tests
