#!/usr/bin/env bash
# Intake, queries, cancel, events, --help and --json through the real binary.
. "$(dirname "$0")/lib.sh"

counts() { sql "SELECT (SELECT count(*) FROM goals) || ' ' || (SELECT count(*) FROM events)"; }

# --- every command has --help, generated from the table
run "$G" --help
expect_rc 0 "goald --help"
help="$OUT"
for cmd in submit goals "goal show" report cancel events "cron next" migrate; do
    case "$help" in *"  $cmd "*) ok ;; *) fail "goald --help does not list $cmd" ;; esac
done
# every command of the table, as --help lists it (plus the hidden ones), has --help
cmds=$(printf '%s\n' "$help" | awk '/^commands:/ {on=1; next} /^$/ {on=0}
           on && /^  [a-z]/ { n = ""; split(substr($0, 3, 28), w, " ")
                              for (i = 1; i in w; i++) if (w[i] ~ /^[a-z]+$/) n = n (n ? " " : "") w[i]
                              print n }')
[ "$(printf '%s\n' "$cmds" | wc -l)" -ge 15 ] || fail "goald --help lists too few commands: $cmds"
while read -r cmd; do
    # shellcheck disable=SC2086
    run "$G" $cmd --help
    expect_rc 0 "$cmd --help"
    expect_out "usage: goald [--db PATH] [--config PATH] $cmd" "$cmd --help"
done <<EOC
$cmds
claim
llm chat
EOC
run "$G" frobnicate
expect_rc 2 "unknown command"
expect_err 'goald: unknown command "frobnicate"'
run "$G" goals --bogus
expect_rc 2 "unknown option"
expect_err "goald: goals: unknown option --bogus"
run "$G" goal
expect_rc 2 "bare group"
expect_err "goald goal show ID"

# --- a valid goal
repo="$T/repo"
make_repo "$repo"
cat >"$T/goal.json" <<JSON
{"title": "Add a --version flag", "description": "print the version", "priority": 80,
 "budget": {"max_tokens": 500000, "max_hours": 4, "max_cost_usd": 2.0},
 "deadline": "2026-12-01T18:00:00Z", "repo": "$repo", "base_branch": "main",
 "success_criteria": ["tool --version prints it"],
 "verification": [{"name": "tests", "type": "test", "command": "make test", "must_pass": true, "timeout_s": 600}],
 "allowed_actions": ["read", "write", "edit", "bash", "run_gates"],
 "publish": {"push": true, "remote": "origin", "pull_request": true}}
JSON
run "$G" submit "$T/goal.json"
expect_rc 0 "submit valid"
id="$OUT"
[[ "$id" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] || fail "submit printed [$id], not an id"
ok
expect_eq "$(sql "SELECT status FROM goals WHERE id='$id'")" queued "goal status"
expect_eq "$(sql "SELECT type FROM events WHERE goal_id='$id'")" goal.submitted "first event"
expect_eq "$(stat -c %a "$GOALD_DB")" 600 "database mode"

# stdin
run bash -c "echo '{\"title\": \"second goal\", \"priority\": 10}' | \"$G\" submit -"
expect_rc 0 "submit from stdin"
id2="$OUT"

# --- invalid goals: exit 2, message names the file and the path, nothing stored
before=$(counts)
check_bad() { # JSON EXPECTED-MESSAGE
    printf '%s' "$1" >"$T/bad.json"
    run "$G" submit "$T/bad.json"
    expect_rc 2 "submit $1"
    expect_err_exact "goald: $T/bad.json: $2"
    expect_eq "$(counts)" "$before" "row counts after a refused goal"
}
check_bad '{"title": "x", "budget": {"max_tokens": "abc"}}' 'budget.max_tokens: expected a positive integer, got "abc"'
check_bad '{"description": "no title"}' 'title: required'
check_bad '{"title": ""}' 'title: must not be empty'
check_bad '{"title": "x", "priority": 1000}' 'priority: expected an integer from 0 to 100, got 1000'
check_bad '{"title": "x", "deadline": "next week"}' 'deadline: expected an RFC 3339 date-time such as 2026-12-01T18:00:00Z, got "next week"'
check_bad '{"title": "x", "repo": "/definitely/not/here"}' 'repo: not a git repository: /definitely/not/here'
check_bad '{"title": "x", "schedule": "61 * * * *"}' 'schedule: minute: 61 is out of range 0-59'
check_bad '{"title": "x", "extra": true}' 'extra: unknown key'
check_bad '{"title": "x", "verification": [{"name": "t"}]}' 'verification[0].command: required'
check_bad '{"title": "x",' 'not valid JSON (line 1, column 14)'
run "$G" submit "$T/missing.json"
expect_rc 2 "missing file"
expect_err "goald: $T/missing.json: No such file or directory"
run bash -c "echo '{\"title\": 1}' | \"$G\" submit -"
expect_rc 2 "bad stdin"
expect_err_exact "goald: <stdin>: title: expected a string, got 1"
expect_eq "$(counts)" "$before" "row counts after refused goals"

# --- goals
run "$G" goals
expect_rc 0 goals
expect_out "${id:0:8}"
expect_out "Add a --version flag"
run "$G" goals --json
expect_rc 0 "goals --json"
json_ok "goals --json"
expect_eq "$(jqo 'length')" 2 "goals --json length"
expect_eq "$(jqo '.[1].id')" "$id" "oldest last"
run "$G" goals --status queued --json
json_ok
expect_eq "$(jqo 'length')" 2 "queued goals"
run "$G" goals --status active --json
json_ok
expect_eq "$(jqo 'length')" 0 "active goals"
run "$G" goals --status sleeping
expect_rc 2 "bad --status"
expect_err 'goals: --status: expected scheduled, queued, active, blocked, completed or cancelled, got "sleeping"'

# --- goal show, by prefix
run "$G" goal show "${id:0:8}" --json
expect_rc 0 "goal show --json"
json_ok
expect_eq "$(jqo .id)" "$id" "show id"
expect_eq "$(jqo .title)" "Add a --version flag" "show title"
expect_eq "$(jqo .status)" queued "show status"
expect_eq "$(jqo .partial)" false "show partial"
expect_eq "$(jqo .branch)" "goald/add-a-version-flag-${id:0:8}" "show branch"
expect_eq "$(jqo .repo)" "$repo" "show repo"
expect_eq "$(jqo .base_branch)" main "show base_branch"
expect_eq "$(jqo .deadline)" 2026-12-01T18:00:00.000Z "show deadline (RFC 3339 with milliseconds: docs/cli.md)"
expect_eq "$(jqo '.success_criteria[0]')" "tool --version prints it" "show criteria"
run "$G" goal show "${id:0:8}"
expect_rc 0 "goal show"
expect_out "status            queued"
run "$G" goal show "${id:0:7}"
expect_rc 2 "short prefix"
expect_err "give at least 8 characters"
run "$G" goal show 00000000
expect_rc 2 "unknown id"
expect_err "goald: goal 00000000: not found"

# --- report
run "$G" report "${id:0:8}" --json
expect_rc 0 "report --json"
json_ok
for k in goal progress work_items budget escalations artifacts; do
    [ "$(jqo "has(\"$k\")")" = true ] || fail "report lacks $k"
    ok
done
expect_eq "$(jqo .goal.id)" "$id" "report goal id"
expect_eq "$(jqo .progress.total_points)" 0 "no items yet"
expect_eq "$(jqo .budget.tokens.limit)" 500000 "token limit"
expect_eq "$(jqo .budget.cost_usd.limit)" 2 "cost limit"
expect_eq "$(jqo .budget.wall_seconds.limit)" 14400 "wall limit"
expect_eq "$(jqo .budget.tokens.spent)" 0 "tokens spent"
run "$G" report "$id2" --json
json_ok
expect_eq "$(jqo .budget.tokens.limit)" null "no token limit"

# items inserted directly: progress by effort points
now=$(date +%s000)
for spec in "wi-1 S done" "wi-2 M done" "wi-3 M in_progress" "wi-4 M queued" "wi-5 S queued"; do
    set -- $spec
    sql "INSERT INTO work_items(id, goal_id, key, title, effort, status, created_at, updated_at)
         VALUES (lower(hex(randomblob(16))), '$id', '$1', 'item $1', '$2', '$3', $now, $now)"
done
run "$G" report "$id" --json
json_ok
expect_eq "$(jqo .progress.done_points)" 4 "done points"
expect_eq "$(jqo .progress.total_points)" 11 "total points"
expect_eq "$(jqo .progress.percent)" 36.4 "percent"
expect_eq "$(jqo '.work_items | length')" 5 "items"
expect_eq "$(jqo '.work_items[2].status')" in_progress "item status"
expect_eq "$(jqo '.work_items[0].effort')" S "item effort"
run "$G" report "$id"
expect_rc 0 report
expect_out "36.4%"
expect_out "2 done, 1 running of 5 items (4 of 11 points)"
expect_out "wi-3      in_progress"

# --- cancel
run "$G" cancel "${id:0:8}"
expect_rc 0 cancel
expect_out "(3 work items)"
expect_eq "$(sql "SELECT status FROM goals WHERE id='$id'")" cancelled "cancelled goal"
expect_eq "$(sql "SELECT group_concat(status, ',') FROM (SELECT status FROM work_items WHERE goal_id='$id' ORDER BY key) AS q1")" \
    "done,done,cancelled,cancelled,cancelled" "items after cancel"
run "$G" cancel "$id"
expect_rc 1 "cancel twice"
expect_err "cannot go from cancelled to cancelled"

# --- events
run "$G" events --json
expect_rc 0 "events --json"
json_ok
expect_eq "$(jqo '[.[].type] | join(",")')" \
    "goal.submitted,goal.submitted,goal.cancelled,work_item.cancelled,work_item.cancelled,work_item.cancelled" "event types"
expect_eq "$(jqo '[.[].seq] | . == (sort)')" true "sequence ordered"
run "$G" events --goal "${id2:0:8}" --json
json_ok
expect_eq "$(jqo 'length')" 1 "events of goal 2"
run "$G" events
expect_rc 0 events
expect_out "goal.cancelled"
# --follow prints new events as they come, one JSON object per line
"$G" events --follow --json >"$T/follow.out" 2>&1 &
fpid=$!
# it is following once it has printed the events already there
following() { [ -s "$T/follow.out" ]; }
wait_until 20 following
echo '{"title": "third"}' | "$G" submit - >/dev/null
followed() { [ "$(tail -n1 "$T/follow.out" | jq -r '.payload.title' 2>/dev/null)" = third ]; }
wait_until 20 followed
kill $fpid; wait $fpid 2>/dev/null || true
expect_eq "$(tail -n1 "$T/follow.out" | jq -r '.payload.title')" third "followed event"

# --- --db overrides GOALD_DB; XDG default path; migrate
# (read-only commands never create a database: ops_outputs.sh)
run "$G" --db "$T/other.db" goals --json
expect_rc 1 "goals on a missing database"
expect_err "no database at $T/other.db"
run "$G" --db "$T/other.db" migrate
expect_rc 0 "migrate creates it"
run "$G" --db "$T/other.db" goals --json
json_ok
expect_eq "$(jqo length)" 0 "--db other database"
(unset GOALD_DB; "$G" migrate >/dev/null && "$G" goals >/dev/null) || fail "default path"
[ -f "$XDG_STATE_HOME/goald/goald.db" ] || fail "no database at \$XDG_STATE_HOME/goald/goald.db"
ok
run "$G" migrate
expect_rc 0 migrate
expect_out "schema version"
done_tests
