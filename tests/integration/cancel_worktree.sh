#!/usr/bin/env bash
# Cancelling a goal removes its worktree and keeps its branch; the blocked
# item (ask_human) and the goal become cancelled.
. "$(dirname "$0")/lib.sh"

make_repo "$T/repo"
cat >"$T/script.jsonl" <<'JSONL'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["x"], "allowed_actions": ["read", "write"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "ask", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "draft.txt", "content": "wip\n"}}, {"name": "ask_human", "arguments": {"question": "Which port?"}}]}
JSONL
export GOALD_LLM_SCRIPT="$T/script.jsonl"
echo "{\"title\": \"cancel me\", \"repo\": \"$T/repo\"}" | "$G" submit - >"$T/id"
id=$(cat "$T/id")
for lane in plan plan work; do r=$("$G" claim --lane $lane) && "$G" job "$r" >/dev/null; done
wt=$(sql "SELECT worktree FROM goals WHERE id = '$id'")
branch=$(sql "SELECT branch FROM goals WHERE id = '$id'")
[ -d "$wt" ] || fail "no worktree at $wt"
ok
expect_eq "$(sql "SELECT status FROM work_items WHERE goal_id = '$id'")" blocked "item waits for a human"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$id'")" blocked "goal blocked"
run "$G" escalations --json
json_ok
expect_eq "$(jqo '.[0].packet.minimal_question // .[0].packet.analysis.minimal_question')" "Which port?" "the question is the escalation's"
run "$G" cancel "$id"
expect_rc 0 cancel
[ ! -e "$wt" ] || fail "the worktree $wt is still there"
ok
git -C "$T/repo" rev-parse --verify -q "refs/heads/$branch" >/dev/null || fail "branch $branch is gone"
ok
git -C "$T/repo" worktree list --porcelain | grep -q "$wt" && fail "worktree still registered"
ok
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$id'") $(sql "SELECT status FROM work_items WHERE goal_id = '$id'")" \
    "cancelled cancelled" "goal and item"
done_tests
