#!/usr/bin/env bash
# A job killed inside git_worktree_add leaves the goal's worktree folder
# with no worktree registered for it.  The next run must make it again
# (worktree.rebuilt, "left half-made") instead of failing "exists and is
# not a worktree" on every retry until the goal is blocked.  A folder
# outside goald's worktree root in the same state is still refused.
. "$(dirname "$0")/lib.sh"

R="$T/repo"
make_repo "$R"
S="$T/s.jsonl"
cat >"$S" <<'EOF'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["notes.txt exists"], "allowed_actions": ["read", "write"], "verification": [{"name": "ok", "type": "custom", "command": "test -f notes.txt", "must_pass": true}]}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "notes", "description": "", "type": "doc", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "done\n"}}, {"name": "complete", "arguments": {"summary": "wrote notes.txt"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_SCRIPT="$S"
printf '{"title":"notes","repo":"%s","base_branch":"main"}' "$R" >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 0
GID=$OUT
for k in elaborate plan; do
    run "$G" claim --lane plan --json
    expect_rc 0 "claim $k"
    run "$G" job "$(jqo .run_id)" --json
    expect_eq "$(jqo .status)" success "$k"
done
# what a job killed in git_worktree_add leaves: the folder, its gitlink and
# a file, no registration
WT="$XDG_STATE_HOME/goald/worktrees/$GID"
mkdir -p "$WT"
printf 'gitdir: %s/.git/worktrees/%s\n' "$R" "$GID" >"$WT/.git"
echo half >"$WT/README"
[ ! -e "$R/.git/worktrees/$GID" ] || fail "the fixture is registered"
ok
run "$G" claim --lane work --json
expect_rc 0 "claim execute"
RUN=$(jqo .run_id)
run "$G" job "$RUN" --json
expect_rc 0 "job"
expect_eq "$(jqo .status)" success "the execute run over a half-made worktree"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'worktree.rebuilt' AND json_extract(payload, '\$.why') LIKE '%left half-made'")" 1 \
    "worktree.rebuilt event"
expect_eq "$(git -C "$WT" rev-parse --abbrev-ref HEAD)" "$(sql "SELECT branch FROM goals")" "the worktree is on the goal's branch"

# The goal's worktree recorded under another root (another node's on the
# same machine, or vcs.worktree_root changed between runs).  The path is
# recorded before the worktree is made, so a run killed just after making
# it (fault point vcs.worktree_added) leaves the goal naming it, and the
# next run, under root B, takes that worktree up; without the record it
# made a second worktree of the same name under B, which git refuses ("is
# already used by"), on every retry.  Half-made there, it is made again.
ROOT_A="$XDG_STATE_HOME/goald/worktrees"
claim_for() { # GOAL: claim work runs until one is GOAL's (others' are run)
    local i
    for i in 1 2 3 4 5; do
        run "$G" claim --lane work --json
        expect_rc 0 "claim work"
        [ "$(sql "SELECT goal_id FROM runs WHERE id = '$(jqo .run_id)'")" != "$1" ] || return 0
        run "$G" job "$(jqo .run_id)" --json
    done
    fail "no work run of goal $1 claimed"
}
for half in 0 1; do
    printf '{"title":"moved %s","repo":"%s","base_branch":"main"}' "$half" "$R" >"$T/goal_m$half.json"
    run "$G" submit "$T/goal_m$half.json"
    GM=$OUT
    printf '%s\n' "$(head -4 "$S")" >>"$S"
    for k in elaborate plan; do
        run "$G" claim --lane plan --json
        run "$G" job "$(jqo .run_id)" --json
        expect_eq "$(jqo .status)" success "$k (moved $half)"
    done
    claim_for "$GM"
    GOALD_FAULT=vcs.worktree_added run "$G" job "$(jqo .run_id)" --json
    expect_eq "$(sql "SELECT worktree FROM goals WHERE id = '$GM'")" "$ROOT_A/$GM" \
        "the path is on the goal when the job dies after making the worktree"
    if [ "$half" = 1 ]; then # left half-made: its registration gone
        rm -rf "$R/.git/worktrees/$GM"
        [ -f "$ROOT_A/$GM/.git" ] || fail "the fixture's folder"
    fi
    # the daemon, under root B, recovers the killed run and carries the goal
    GOALD_VCS_WORKTREE_ROOT="$T/rootB" run "$G" daemon --once
    expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GM'")" completed \
        "the goal under root B (moved $half): $(sql "SELECT failure_reason FROM runs WHERE goal_id = '$GM' AND status <> 'success'")"
    expect_eq "$(sql "SELECT worktree FROM goals WHERE id = '$GM'")" "$ROOT_A/$GM" "the recorded worktree is the one used"
    [ ! -e "$T/rootB/$GM" ] || fail "no second worktree under root B"
    ok
done
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'worktree.rebuilt' AND json_extract(payload, '\$.why') LIKE '%left half-made'")" 2 \
    "the half-made one under the recorded root was made again"

# The same when the goal's worktree is first made for an item that runs in
# a worktree of its own (two independent items: the first starts beside
# the other, ready): the goal's worktree is recorded before it is made,
# and the item's own goes beside it, under the recorded root.
S2="$T/s2.jsonl"
cat >"$S2" <<'JSON'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["a.txt and b.txt exist"], "allowed_actions": ["read", "write"], "verification": [{"name": "ok", "type": "custom", "command": "true", "must_pass": true}]}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "a", "description": "", "type": "doc", "priority": 60, "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "b", "description": "", "type": "doc", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a\n"}}, {"name": "complete", "arguments": {"summary": "wrote a.txt"}}]}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "b.txt", "content": "b\n"}}, {"name": "complete", "arguments": {"summary": "wrote b.txt"}}]}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a\n"}}, {"name": "complete", "arguments": {"summary": "wrote a.txt"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
JSON
# gone: the path recorded, the worktree never made (a run killed between
# the two): the items, each in a worktree of its own, make it, and the
# final check finds it at its path
for variant in moved gone; do
    printf '{"title":"two %s","repo":"%s","base_branch":"main"}' "$variant" "$R" >"$T/goal_two.json"
    run "$G" submit "$T/goal_two.json"
    GT=$OUT
    printf '%s\n' "$(cat "$S2")" >"$S2.$variant"
    for k in elaborate plan; do
        GOALD_LLM_SCRIPT="$S2.$variant" run "$G" claim --lane plan --json
        GOALD_LLM_SCRIPT="$S2.$variant" run "$G" job "$(jqo .run_id)" --json
        expect_eq "$(jqo .status)" success "$k (two items, $variant)"
    done
    claim_for "$GT"
    # moved: killed once the goal's worktree is made; gone: once the item's
    # own is made too (its retry runs there), and the goal's then removed
    point=vcs.worktree_added
    [ "$variant" = moved ] || point=vcs.worktree_added@2
    GOALD_LLM_SCRIPT="$S2.$variant" GOALD_FAULT=$point run "$G" job "$(jqo .run_id)" --json
    expect_eq "$(sql "SELECT worktree FROM goals WHERE id = '$GT'")" "$ROOT_A/$GT" \
        "the goal's worktree is on the goal when the job dies after making it for an item of its own"
    B=$ROOT_A
    if [ "$variant" = moved ]; then
        B="$T/rootB"
    else
        [ -d "$ROOT_A/$GT.items" ] || fail "the fixture: the item's own worktree is made"
        git -C "$R" worktree remove --force "$ROOT_A/$GT"
        [ ! -e "$ROOT_A/$GT" ] || fail "the fixture: the goal's worktree is gone"
    fi
    GOALD_LLM_SCRIPT="$S2.$variant" GOALD_VCS_WORKTREE_ROOT="$B" run "$G" daemon --once
    expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GT'")" completed \
        "the two-item goal ($variant): $(sql "SELECT failure_reason FROM runs WHERE goal_id = '$GT' AND status <> 'success'")"
    [ ! -e "$T/rootB/$GT" ] && [ ! -e "$T/rootB/$GT.items" ] || fail "no worktree of the goal under root B"
    ok
done

# the same state outside goald's worktree root is not goald's to remove
mkdir -p "$T/elsewhere"
echo mine >"$T/elsewhere/keep.txt"
printf '{"title":"x","repo":"%s","base_branch":"main"}' "$R" >"$T/goal2.json"
run "$G" submit "$T/goal2.json"
GID2=$OUT
sql "UPDATE goals SET worktree = '$T/elsewhere' WHERE id = '$GID2'" >/dev/null
printf '%s\n' "$(head -4 "$S")" >>"$S"
for k in elaborate plan; do
    run "$G" claim --lane plan --json
    run "$G" job "$(jqo .run_id)" --json
done
run "$G" claim --lane work --json
run "$G" job "$(jqo .run_id)" --json
expect_eq "$(cat "$T/elsewhere/keep.txt")" mine "a folder outside the worktree root is left alone"
done_tests
