#!/usr/bin/env bash
# Progress tells the truth.  A goal without a repository
# says "unverified — no repository" in goals, goal show, report (text and
# JSON: goal.unverified_reason) and says there is no pull request; the bar
# and the counts show blocked items (an ask_human answer outstanding),
# cancelled ones (complete_partial) and skipped ones, never a bare "100%".
. "$(dirname "$0")/lib.sh"

S="$T/s.jsonl"
cat >"$S" <<'EOF'
{"stage": "elaborate", "content": {"components": ["notes"], "implicit_requirements": [], "success_criteria": ["notes exist"], "allowed_actions": ["write", "complete", "ask_human"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Write the note", "description": "write it", "type": "doc", "priority": 80, "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Write the second note", "description": "write it", "type": "doc", "priority": 70, "effort": "M", "critical": false, "depends_on": []}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "note.txt", "content": "hi"}}]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "written"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
{"stage": "execute", "tool_calls": [{"name": "ask_human", "arguments": {"question": "which note?"}}]}
EOF
export GOALD_LLM_MODELS="[{\"provider\":\"script\",\"model\":\"m1\",\"script\":\"$S\"}]"
echo '{"title": "write notes"}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit
GID=$OUT
run "$G" daemon --once; expect_rc 3 "daemon --once (wi-2 waits on a human)"
expect_eq "$(sql "SELECT group_concat(key || ':' || status, ' ') FROM (SELECT * FROM work_items ORDER BY key) AS q1")" \
    "wi-1:done wi-2:blocked" "items"

NR="unverified — no repository"
# --- blocked: in the bar and the counts --------------------------------------
run "$G" report "$GID"; expect_rc 0 report
expect_out "status   active, $NR"
expect_out "publish  n/a (no repository: no branch, commit or pull request)"
expect_out "1 done, 1 blocked of 2 items (1 of 4 points)"
bar=$(printf '%s\n' "$OUT" | sed -n 's/^progress \[\(.*\)\].*/\1/p')
expect_eq "$(printf '%s' "$bar" | tr -cd '#' | wc -c)" 10 "done cells (1 of 4 points of 40)"
expect_eq "$(printf '%s' "$bar" | tr -cd '!' | wc -c)" 30 "blocked cells"
run "$G" report "$GID" --json; expect_rc 0
expect_eq "$(jqo '.progress | [.items_done, .items_blocked, .blocked_points, .items_skipped] | join(" ")')" "1 1 3 0"
expect_eq "$(jqo .goal.unverified_reason)" "no repository"
run "$G" goal show "$GID"; expect_rc 0
expect_out "repo              none ($NR)"
expect_out "1 done, 1 blocked of 2 items"
run "$G" goal show "$GID" --json; expect_rc 0
expect_eq "$(jqo .unverified_reason)" "no repository"
run "$G" goals; expect_rc 0
expect_out "          $NR"
run "$G" goals --json; expect_rc 0
expect_eq "$(jqo '.[0].unverified_reason')" "no repository"

# --- skipped: never hidden behind the percentage, never counted as done ------
# (the item's status set directly: recovery to "skipped" is tested elsewhere)
sql "UPDATE work_items SET status = 'skipped' WHERE key = 'wi-2'"
run "$G" report "$GID"; expect_rc 0
expect_out "25.0%"
expect_out "1 done, 1 skipped of 2 items (1 of 4 points)"
bar=$(printf '%s\n' "$OUT" | sed -n 's/^progress \[\(.*\)\].*/\1/p')
expect_eq "$(printf '%s' "$bar" | tr -cd 's' | wc -c)" 30 "skipped cells"
run "$G" report "$GID" --json; expect_rc 0
expect_eq "$(jqo '.progress | [.items_skipped, .skipped_points, .percent] | join(" ")')" "1 3 25"
sql "UPDATE work_items SET status = 'blocked' WHERE key = 'wi-2'"

# --- complete_partial: the goal completes; the cancelled item is named ------
E=$(sql "SELECT id FROM escalations WHERE status = 'open'")
run "$G" resolve "$E" --action complete_partial; expect_rc 0 resolve
run "$G" daemon --once; expect_rc 0 "daemon --once after resolve"
run "$G" report "$GID"; expect_rc 0
expect_out "status   completed (partial), $NR"
expect_out "1 done, 1 cancelled of 2 items (1 of 4 points)"

# --- a goal with a repository says none of it --------------------------------
make_repo "$T/repo"
printf '{"title": "with a repo", "repo": "%s"}' "$T/repo" >"$T/g2.json"
run "$G" submit "$T/g2.json"; expect_rc 0
G2=$OUT
run "$G" report "$G2"; expect_rc 0
case "$OUT" in *"no repository"*) fail "a goal with a repo is not unverified: $OUT" ;; esac
run "$G" goal show "$G2" --json; expect_rc 0
expect_eq "$(jqo .unverified_reason)" null
done_tests
