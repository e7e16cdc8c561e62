#!/usr/bin/env bash
# The host stays clean: text that came from a model or a goal is
# never written raw to a terminal.  A goal titled with escape sequences
# (OSC "set the window title", "clear the screen"), a model whose item
# title, tool output and question hold them, and DEL / C1 / CR / BS too:
# the text outputs of goals, goal show, report, events and escalations hold
# no raw control byte (ESC, BEL, CR, BS, DEL, C1) - the sequences are shown
# escaped (\e]0;pwned\a) - and the JSON outputs stay valid JSON.
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

repo="$T/repo"
make_project "$repo"
# \u001b]0;pwned\u0007 sets the window title; \u001b[2J clears the screen
EVIL='\u001b]0;pwned\u0007\u001b[2J\r\b\u007f\u009b1m'
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["ok"],"allowed_actions":["bash"],"verification":[]}}'
    echo "{\"stage\":\"plan\",\"content\":{\"work_items\":[{\"key\":\"wi-1\",\"title\":\"item $EVIL end\",\"description\":\"\",\"type\":\"code\",\"priority\":50,\"effort\":\"S\",\"critical\":true,\"depends_on\":[]}]}}"
    echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"printf \"out \\033]0;pwned\\007\\033[2J\\r\\b\\177 done\\n\""}}]}'
    echo "{\"stage\":\"execute\",\"tool_calls\":[{\"name\":\"ask_human\",\"arguments\":{\"question\":\"question $EVIL end\"}}]}"
} >"$T/script.jsonl"
goal_json "$repo" "x" | jq --arg t "$(printf 'goal \033]0;pwned\007\033[2J\r\b\177\302\233 end')" '.title = $t' >"$T/goal.json"
submit_goal "$T/goal.json"
GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$T/script.jsonl" run "$G" daemon --once
expect_rc 3 "daemon --once (the question waits on a human)"
[ "$(printf '%s' "$OUT" | LC_ALL=C grep -c -P '[\x1b\x07\x0d\x08\x7f]|\xc2[\x80-\x9f]' || true)" = 0 ] ||
    fail "raw control bytes in the summary of daemon --once: $(printf '%s' "$OUT" | od -c | head)"
ok
expect_eq "$(sql "SELECT status FROM work_items")" blocked "the item waits for its answer"

# raw control bytes: ESC BEL CR BS DEL, and C1 (U+0080..U+009F in UTF-8)
raw() { LC_ALL=C grep -c -P '[\x1b\x07\x0d\x08\x7f]|\xc2[\x80-\x9f]' "$1" || true; }
check_text() { # NAME CMD...: text output without a raw control byte
    local name=$1
    shift
    "$@" >"$T/$name.out" 2>"$T/$name.err" || fail "$name: exit $?: $(cat "$T/$name.err")"
    [ "$(raw "$T/$name.out")" = 0 ] || fail "$name: raw control bytes in: $(od -c "$T/$name.out" | head -20)"
    ok
    [ "$(raw "$T/$name.err")" = 0 ] || fail "$name: raw control bytes on stderr"
    ok
}
check_text goals "$G" goals
# (the title column is cut at 32 columns with an ellipsis)
grep -qF 'goal \e]0;pwned\a\e[2J\r\b\x7f' "$T/goals.out" || fail "goals: the title is not shown escaped: $(cat "$T/goals.out")"
ok
check_text show "$G" goal show "$GOAL_ID"
grep -qF '\e]0;pwned\a' "$T/show.out" || fail "goal show: the title is not shown escaped"
ok
check_text report "$G" report "$GOAL_ID"
grep -qF 'item \e]0;pwned\a\e[2J' "$T/report.out" || fail "report: the item title is not shown escaped: $(cat "$T/report.out")"
ok
# report --item and the partial-failures block: a gate's output tail and the
# test names a gate reported (both the model's work) carry escape sequences
ITEM_ID=$(sql "SELECT id FROM work_items")
TN='test_\u001b]0;pwned\u0007\u001b[2J_case'
sql "INSERT INTO gate_results(goal_id, item_id, run_id, name, type, command, passed, exit_code, output_tail, tree_id, created_at)
     VALUES('$GOAL_ID', '$ITEM_ID', (SELECT id FROM runs ORDER BY rowid DESC LIMIT 1), 'tests', 'test', 'make test', 0, 1,
            'FAIL ' || char(27) || ']0;pwned' || char(7) || char(27) || '[2J' || char(13) || char(10) || 'line two', 't1', 0)"
sql "INSERT INTO decisions(goal_id, item_id, kind, data, created_at)
     VALUES('$GOAL_ID', '$ITEM_ID', 'verification', json('{\"gates\":[{\"gate\":\"tests\",\"introduced\":[\"$TN\"]}],\"introduced\":[\"$TN\"]}'), 0)"
sql "INSERT INTO decisions(goal_id, kind, data, created_at)
     VALUES('$GOAL_ID', 'final_check', json('{\"partial\":true,\"partial_failures\":[{\"gate\":\"tests\",\"tests\":[\"$TN\"]}]}'), 0)"
check_text item "$G" report "$GOAL_ID" --item wi-1
grep -qF 'failing tests: test_\e]0;pwned\a\e[2J_case' "$T/item.out" || fail "report --item: the test name is not shown escaped: $(cat "$T/item.out")"
ok
grep -qF 'FAIL \e]0;pwned\a\e[2J\r' "$T/item.out" || fail "report --item: the output tail is not shown escaped: $(cat "$T/item.out")"
ok
grep -qx 'line two' "$T/item.out" || fail "report --item: the output tail lost its lines: $(cat "$T/item.out")"
ok
grep -qF 'item     wi-1  item \e]0;pwned' "$T/item.out" || fail "report --item: the item title is not shown escaped"
ok
check_text partial "$G" report "$GOAL_ID"
grep -qF 'tests: test_\e]0;pwned\a' "$T/partial.out" || fail "report: the partial failures are not shown escaped: $(cat "$T/partial.out")"
ok
check_text events env COLUMNS=1000 "$G" events  # whole payloads (lines fit the width)
grep -qF 'pwned' "$T/events.out" || fail "events: the tool output never showed"
ok
check_text escalations "$G" escalations
grep -qF 'question \e]0;pwned\a\e[2J' "$T/escalations.out" || fail "escalations: the question is not shown escaped: $(cat "$T/escalations.out")"
ok
# the JSON outputs: valid, and the text is there (escaped by JSON)
for cmd in "goals --json" "goal show $GOAL_ID --json" "report $GOAL_ID --json" "events --json" "escalations --json"; do
    run "$G" $cmd
    expect_rc 0 "$cmd"
    json_ok "$cmd"
    LC_ALL=C grep -q -P '[\x1b\x07]' <<<"$OUT" && fail "$cmd: raw ESC or BEL in JSON"
    ok
done
done_tests
