#!/usr/bin/env bash
# What a goal leaves beside its worktree — its items' worktrees
# (<root>/<goal>.items: folders, registrations in the repository, item
# branches) and its warm build folders (<store>/goals/<goal>/builds) —
# goes at its end together with its worktree.  A job killed after the
# goal's worktree went, before the rest, leaves them with no worktree to
# reach them through: the daemon's sweep finds them by their names and
# removes them once the goal ended, through the repository's records,
# never following a link.  A live goal's are kept.
. "$(dirname "$0")/lib.sh"

R="$T/repo"
make_repo "$R"
S="$T/s.jsonl"
cat >"$S" <<'JSON'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["notes.txt exists"], "allowed_actions": ["read", "write"], "verification": [{"name": "ok", "type": "custom", "command": "test -f notes.txt", "must_pass": true}]}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "notes", "description": "", "type": "doc", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "done\n"}}, {"name": "complete", "arguments": {"summary": "wrote notes.txt"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
JSON
export GOALD_LLM_SCRIPT="$S"
printf '{"title":"notes","repo":"%s","base_branch":"main"}' "$R" >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 0
GID=$OUT
for lane in plan plan work work; do
    run "$G" claim --lane $lane --json
    expect_rc 0 "claim ($lane)"
    run "$G" job "$(jqo .run_id)" --json
    expect_eq "$(jqo .status)" success "job ($lane)"
done
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "the goal"
BR=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
ROOT="$XDG_STATE_HOME/goald/worktrees"
# the store's own folder: the database's, or the node's state folder on
# PostgreSQL
SD=$T
[ -z "${GOALD_TEST_PG:-}" ] || SD="$XDG_STATE_HOME/goald"
[ ! -e "$ROOT/$GID" ] || fail "the goal's worktree went at its end"

# what a publish killed after removing the goal's worktree leaves: an
# item's worktree (registered, on its item branch) and a build folder
plant() { # goal id, item id
    git -C "$R" worktree add -q -b "$(sql "SELECT branch FROM goals WHERE id = '$1'")-item-${2:0:8}" \
        "$ROOT/$1.items/$2" main
    mkdir -p "$SD/goals/$1/builds/w1/d0"
    echo obj >"$SD/goals/$1/builds/w1/d0/a.o"
}
IID=89abcdef-0000-4000-8000-000000000001
plant "$GID" "$IID"
# a link in the items folder: the sweep removes the link, never its target
mkdir -p "$T/outside"
echo keep >"$T/outside/keep.txt"
ln -s "$T/outside" "$ROOT/$GID.items/link"

# a goal that has not ended (a schedule's template, waiting for its
# time): leftovers named by it are kept
printf '{"title":"live","repo":"%s","base_branch":"main","schedule":"0 9 1 1 *"}' "$R" >"$T/goal2.json"
run "$G" submit "$T/goal2.json"
GID2=$OUT
plant "$GID2" "$IID"

run "$G" daemon --once
expect_rc 0 "daemon --once"
[ ! -e "$ROOT/$GID.items" ] || fail "the ended goal's items folder is removed: $(ls -la "$ROOT/$GID.items")"
ok
expect_eq "$(git -C "$R" worktree list --porcelain | grep -c "$GID.items")" 0 "its item worktree's registration"
expect_eq "$(git -C "$R" branch --list "$BR-item-*" | wc -l)" 0 "its item branch"
expect_eq "$(git -C "$R" branch --list "$BR" | wc -l)" 1 "the goal's branch stays"
[ ! -e "$SD/goals/$GID/builds" ] || fail "the ended goal's build folders are removed"
ok
expect_eq "$(cat "$T/outside/keep.txt")" keep "a link's target is left alone"
[ -d "$ROOT/$GID2.items/$IID" ] || fail "a live goal's item worktree is kept"
ok
[ -f "$SD/goals/$GID2/builds/w1/d0/a.o" ] || fail "a live goal's build folder is kept"
ok
expect_eq "$(git -C "$R" worktree list --porcelain | grep -c "$GID2.items")" 1 "a live goal's registration is kept"

# build folders alone (the goal's worktree and items folder gone): found
# by their own names
mkdir -p "$SD/goals/$GID/builds/w2"
run "$G" daemon --once
expect_rc 0 "daemon --once, again"
[ ! -e "$SD/goals/$GID/builds" ] || fail "build folders alone are removed"
ok
expect_err "its build folders removed (the goal ended)"
[ -f "$SD/goals/$GID2/builds/w1/d0/a.o" ] || fail "a live goal's build folder is still kept"
ok
done_tests
