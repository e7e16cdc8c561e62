#!/usr/bin/env bash
# `events --since` (RFC 3339 or a duration), --tail N,
# --type (comma list, prefix*), and --follow --goal ending (exit 0) once
# the goal has ended, with its last events printed.
. "$(dirname "$0")/lib.sh"

S="$T/s.jsonl"
cat >"$S" <<'EOF'
{"stage": "elaborate", "content": {"components": ["notes"], "implicit_requirements": [], "success_criteria": ["a note"], "allowed_actions": ["write", "complete"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Write", "description": "", "type": "doc", "priority": 80, "effort": "S", "critical": true, "depends_on": []}]}}
{"stage": "execute", "sleep_ms": 1500, "tool_calls": [{"name": "write", "arguments": {"path": "note.txt", "content": "hi"}}]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "written"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_MODELS="[{\"provider\":\"script\",\"model\":\"m1\",\"script\":\"$S\"}]"
echo '{"title": "one note"}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0
GID=$OUT

# --follow --goal: started before the daemon, it ends by itself with the goal
"$G" events --goal "$GID" --follow --json >"$T/follow.out" 2>"$T/follow.err" &
FPID=$!
run "$G" daemon --once; expect_rc 0 "daemon --once"
for _ in $(seq 1 100); do kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
kill -0 $FPID 2>/dev/null && { kill $FPID; fail "events --follow --goal did not end with the goal"; }
wait $FPID || fail "events --follow exit code $?: $(cat "$T/follow.err")"
ok
expect_eq "$(jq -r .type "$T/follow.out" | grep -c '^goal.completed$')" 1 "goal.completed followed"
expect_eq "$(jq -r .type "$T/follow.out" | head -n1)" goal.submitted "from the first event"
total=$(sql "SELECT count(*) FROM events WHERE goal_id = '$GID'")
expect_eq "$(grep -c . "$T/follow.out")" "$total" "every event of the goal, once"

# --tail N
run "$G" events --tail 2 --json; expect_rc 0
expect_eq "$(jqo 'map(.seq) | join(",")')" "$(sql "SELECT group_concat(id) FROM (SELECT id FROM (SELECT id FROM events ORDER BY id DESC LIMIT 2) AS q0 ORDER BY id) AS q1" | tr '|' ',')" "the last two"
expect_eq "$(jqo 'length')" 2
run "$G" events --tail 0 --json; expect_eq "$(jqo length)" 0 "--tail 0"
# --type: exact, comma list, prefix
run "$G" events --type goal.completed --json
expect_eq "$(jqo 'map(.type) | unique | join(",")')" goal.completed
run "$G" events --type 'tool_call.*,run.success' --json
expect_eq "$(jqo 'map(.type) | unique | join(",")')" "run.success,tool_call.completed,tool_call.started"
expect_eq "$(jqo 'length')" "$(sql "SELECT count(*) FROM events WHERE type LIKE 'tool_call.%' OR type = 'run.success'")"
run "$G" events --type 'tool_call.*' --tail 1 --json
expect_eq "$(jqo '.[0].type')" tool_call.completed "--type with --tail"
# --since: a time, a duration
mid=$(sql "SELECT min(ts) FROM events WHERE type = 'tool_call.started'")
since=$(date -u -d "@$((mid / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((mid % 1000)))Z
run "$G" events --since "$since" --json; expect_rc 0
expect_eq "$(jqo 'length')" "$(sql "SELECT count(*) FROM events WHERE ts >= $mid")" "--since TIME"
expect_eq "$(jqo '.[0].type')" "$(sql "SELECT type FROM events WHERE ts >= $mid ORDER BY id LIMIT 1")"
run "$G" events --since 1h --json; expect_eq "$(jqo length)" "$(sql "SELECT count(*) FROM events")" "--since 1h"
run "$G" events --since 2099-01-01T00:00:00Z --json; expect_eq "$(jqo length)" 0 "--since the future"
run "$G" events --since 10x; expect_rc 2 "bad --since"
expect_err "events: --since: expected an RFC 3339 date-time or a duration like 10m"
run "$G" events --tail -1; expect_rc 2 "bad --tail"
# human lines fit 80 columns when not a terminal
run "$G" events; expect_rc 0
[ "$(printf '%s\n' "$OUT" | max_cols)" -le 80 ] || fail "events lines over 80 columns"; ok
done_tests
