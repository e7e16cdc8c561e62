#!/usr/bin/env bash
# Code state that any node can pick up (docs/scaling.md,
# "Code state: repositories every node can reach").  A goal whose repo is
# a bare repository works in the node's own clone (beside the database:
# repos/<first 16 hex of sha256(repo)>), pushes each done item's commit to
# refs/goald/<goal-id>, and starts every item from the head the database
# records, never from what the remote holds:
#   1. a chain of 3 items by `daemon --once`: 3 commits on refs/goald/<id>
#      above the base, one per item, the clone where it belongs
#   2. a second node: item 1 on one node, then its clone and worktree gone
#      and another worktree root (a fresh node): it fetches and goes on
#   3. a hostile remote: a commit someone else pushed to refs/goald/<id>
#      (a zombie run) is not built on, and is replaced
#   4. a push that fails: the item is not done, the run failed as vcs;
#      recovery retries it once the remote takes pushes again
#   5. intake: a URL is taken on its syntax (with a base branch), a bare
#      repository is probed, anything else refused naming "repo"
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

# three notes, one per item, in a chain
S="$T/script.jsonl"
note() { # KEY FILE
    printf '{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "%s", "content": "%s\\n"}}, {"name": "complete", "arguments": {"summary": "wrote %s"}}]}\n' "$2" "$1" "$2"
    echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}}'
}
{
    for _ in 1 2 3 4 5; do
        echo '{"stage": "elaborate", "content": {"components": ["notes"], "implicit_requirements": [], "success_criteria": ["three notes"], "allowed_actions": ["read", "write"], "verification": []}}'
        echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Note one", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Note two", "type": "code", "effort": "S", "critical": true, "depends_on": ["wi-1"]}, {"key": "wi-3", "title": "Note three", "type": "code", "effort": "S", "critical": true, "depends_on": ["wi-2"]}]}}'
    done
    for _ in 1 2 3 4 5 6; do note one one.txt; note two two.txt; note three three.txt; done
} >"$S"
export GOALD_LLM_SCRIPT="$S" GOALD_CONTROL_BACKOFF_BASE_MS=10 GOALD_CONTROL_BACKOFF_MAX_MS=50

make_repo "$T/src"
# origin_new NAME: a bare repository $T/NAME.git holding src's main
origin_new() { rm -rf "$T/$1.git"; git clone -q --bare "$T/src" "$T/$1.git"; }
BASE=$(git -C "$T/src" rev-parse main)

# the folder of the node's clone of repo, beside the database (SQLite) or
# in node.state_dir (PostgreSQL)
node_dir() { if [ -n "${GOALD_TEST_PG:-}" ]; then echo "$XDG_STATE_HOME/goald"; else dirname "$GOALD_DB"; fi; }
clone_of() { echo "$(node_dir)/repos/$(printf '%s' "$1" | sha256sum | cut -c1-16)"; }

# check_history ORIGIN GID: refs/goald/GID holds exactly 3 commits above the
# base, with 3 distinct Work-Item-Id trailers naming the goal's items, and
# the database's head is its tip
check_history() {
    local o=$1 gid=$2 tip ids
    tip=$(git -C "$o" rev-parse "refs/goald/$gid") || fail "no refs/goald/$gid in $o"
    expect_eq "$(git -C "$o" rev-list --count "$BASE..$tip")" 3 "commits on refs/goald/$gid above the base"
    expect_eq "$(git -C "$o" merge-base "$BASE" "$tip")" "$BASE" "the goal starts at the base"
    ids=$(git -C "$o" log --format='%(trailers:key=Work-Item-Id,valueonly)' "$BASE..$tip" | grep . | sort)
    expect_eq "$(echo "$ids" | sort -u | wc -l)" 3 "distinct Work-Item-Id trailers"
    expect_eq "$ids" "$(sql "SELECT id FROM work_items WHERE goal_id = '$gid' ORDER BY id")" \
        "the trailers name the goal's items"
    expect_eq "$(sql "SELECT head_commit FROM goals WHERE id = '$gid'")" "$tip" "the database's head"
    expect_eq "$(sql "SELECT commit_sha FROM work_items WHERE goal_id = '$gid' AND key = 'wi-3'")" "$tip" \
        "the last item's commit"
    expect_eq "$(git -C "$o" show "$tip:one.txt")$(git -C "$o" show "$tip:two.txt")$(git -C "$o" show "$tip:three.txt")" \
        "onetwothree" "the three notes"
    run git -C "$o" fsck --strict --no-progress
    expect_rc 0 "git fsck of $o"
}

# daemon_completes ORIGIN [WHEN]: `goald daemon --once` exits 0 with the
# goal completed and its history on ORIGIN as check_history wants it; WHEN
# ends the messages ("after the zombie")
daemon_completes() {
    local when=${2:+ $2}
    run "$G" daemon --once
    expect_rc 0 "daemon --once$when"
    expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "goal$when"
    check_history "$1" "$GID"
}

# not_in_history ORIGIN COMMIT WHOSE: COMMIT is not in the goal's history
# on ORIGIN (WHOSE: "the zombie's")
not_in_history() {
    run git -C "$1" merge-base --is-ancestor "$2" "refs/goald/$GID"
    expect_rc 1 "$3 commit is not in the goal's history"
}

# --- 1. a chain of three items on a bare repository -------------------------
origin_new chain
submit_fresh chain "$T/chain.git"
daemon_completes "$T/chain.git"
expect_eq "$(sql "SELECT group_concat(key || ':' || status, ' ') FROM (SELECT key, status FROM work_items WHERE goal_id = '$GID' ORDER BY key) AS k")" \
    "wi-1:done wi-2:done wi-3:done" "items"
C=$(clone_of "$T/chain.git")
[ -d "$C/.git" ] || fail "no clone at $C: $(ls -R "$(node_dir)" 2>&1 | head -20)"
ok
expect_eq "$(git -C "$C" config remote.origin.url)" "$T/chain.git" "the clone's origin"
expect_eq "$(git -C "$C" rev-parse "$(sql "SELECT branch FROM goals WHERE id = '$GID'")")" \
    "$(git -C "$T/chain.git" rev-parse "refs/goald/$GID")" "the clone's goal branch"
expect_eq "$(git -C "$T/chain.git" for-each-ref --format='%(refname)' refs/heads)" refs/heads/main \
    "no branch pushed without publish.push"
expect_eq "$(sql "SELECT worktree FROM goals WHERE id = '$GID'")" "$XDG_STATE_HOME/goald/worktrees/$GID" \
    "the goal's worktree: this node's"
[ ! -e "$XDG_STATE_HOME/goald/worktrees/$GID" ] || fail "the worktree was not removed at publish"
ok

# --- 2. a second node picks the goal up after item 1 -------------------------
origin_new node2
submit_fresh node2 "$T/node2.git"
step plan
step plan
step work
expect_eq "$(sql "SELECT group_concat(key || ':' || status, ' ') FROM (SELECT key, status FROM work_items WHERE goal_id = '$GID' ORDER BY key) AS k")" \
    "wi-1:done wi-2:ready wi-3:queued" "after item 1"
C1=$(sql "SELECT commit_sha FROM work_items WHERE goal_id = '$GID' AND key = 'wi-1'")
expect_eq "$(git -C "$T/node2.git" rev-parse "refs/goald/$GID")" "$C1" "item 1 pushed before done"
expect_eq "$(sql "SELECT head_commit FROM goals WHERE id = '$GID'")" "$C1" "the head after item 1"
# the first node is gone: its clone and worktree with it; the next one has
# its own worktree root
rm -rf "$(clone_of "$T/node2.git")" "$XDG_STATE_HOME/goald/worktrees/$GID"
export XDG_STATE_HOME="$T/state-b"
daemon_completes "$T/node2.git" "on the second node"
expect_eq "$(git -C "$T/node2.git" rev-parse "refs/goald/$GID~2")" "$C1" "item 1's commit kept, not redone"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE item_id IN (SELECT id FROM work_items WHERE goal_id = '$GID') AND status <> 'success'")" 0 \
    "every item run succeeded"
[ -d "$(clone_of "$T/node2.git")/.git" ] || fail "the second node made no clone"
ok
expect_eq "$(sql "SELECT worktree FROM goals WHERE id = '$GID'")" "$T/state-b/goald/worktrees/$GID" \
    "the goal's worktree: the second node's"
export XDG_STATE_HOME="$T/state"

# --- 3. a hostile remote: a zombie's commit on refs/goald/<id> ---------------
origin_new zombie
submit_fresh zombie "$T/zombie.git"
step plan
step plan
step work
C1=$(sql "SELECT commit_sha FROM work_items WHERE goal_id = '$GID' AND key = 'wi-1'")
I2=$(sql "SELECT id FROM work_items WHERE goal_id = '$GID' AND key = 'wi-2'")
# a run that died after pushing would leave this: a commit for item 2 the
# database never took, on top of the head
git clone -q "$T/zombie.git" "$T/zc"
git -C "$T/zc" fetch -q origin "refs/goald/$GID"
git -C "$T/zc" checkout -q FETCH_HEAD
echo zombie >"$T/zc/zombie.txt"
git -C "$T/zc" add zombie.txt
git -C "$T/zc" -c user.email=z@e -c user.name=zombie commit -q -m "zombie" -m "Work-Item-Id: $I2"
Z=$(git -C "$T/zc" rev-parse HEAD)
git -C "$T/zc" push -q origin "HEAD:refs/goald/$GID"
expect_eq "$(git -C "$T/zombie.git" rev-parse "refs/goald/$GID")" "$Z" "the zombie's commit on the remote"
daemon_completes "$T/zombie.git" "after the zombie"
not_in_history "$T/zombie.git" "$Z" "the zombie's"
expect_eq "$(git -C "$T/zombie.git" rev-parse "refs/goald/$GID~2")" "$C1" "item 2 built on the database's head"
expect_eq "$(git -C "$T/zombie.git" log --format=%an "$BASE..refs/goald/$GID" | sort -u)" goald "authors"

# a head the remote lost: the run fails naming the commit and the ref,
# and never goes on from something else
origin_new lost
submit_fresh lost "$T/lost.git"
step plan
step plan
step work
git -C "$T/lost.git" update-ref "refs/goald/$GID" "$BASE"
git -C "$T/lost.git" reflog expire --expire=now --all
git -C "$T/lost.git" gc -q --prune=now
rm -rf "$(clone_of "$T/lost.git")"
H=$(sql "SELECT head_commit FROM goals WHERE id = '$GID'")
step work
expect_eq "$(jqo .status)" failed "a run without the goal's head"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE id = '$RUN' AND failure_reason LIKE '%$H%refs/goald/$GID%'")" 1 \
    "the failure names the head and the ref: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
expect_eq "$(sql "SELECT status FROM work_items WHERE goal_id = '$GID' AND key = 'wi-2'")" ready "item 2 not done"
expect_eq "$(git -C "$T/lost.git" rev-parse "refs/goald/$GID")" "$BASE" "nothing pushed"

# --- 4. a push the remote refuses --------------------------------------------
# A stale lock of the ref, as a crashed git leaves it: libgit2 pushes to a
# local repository without running its hooks, and root ignores file modes,
# so this is how a local remote refuses the ref.
origin_new refused
submit_fresh refused "$T/refused.git"
step plan
step plan
mkdir -p "$T/refused.git/refs/goald"
: >"$T/refused.git/refs/goald/$GID.lock"
step work
expect_eq "$(jqo .status)" failed "the run whose push failed"
expect_eq "$(jqo .error_class)" vcs "its error class"
expect_eq "$(sql "SELECT error_class FROM runs WHERE id = '$RUN'")" vcs "the run's error class"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE id = '$RUN' AND failure_reason LIKE '%refs/goald/$GID%'")" 1 \
    "the failure names the ref: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
expect_eq "$(sql "SELECT status FROM work_items WHERE goal_id = '$GID' AND key = 'wi-1'")" ready "item 1 not done"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$GID' AND type = 'work_item.done'")" 0 "no done event"
expect_eq "$(sql "SELECT ifnull(head_commit, 'none') FROM goals WHERE id = '$GID'")" none "no head recorded"
run git -C "$T/refused.git" rev-parse -q --verify "refs/goald/$GID"
expect_rc 1 "nothing on the remote"
# the commit stays on this node's goal branch, where the database never
# took it from: the next run must not build on it
X=$(sql "SELECT hash FROM artifacts WHERE run_id = '$RUN' AND type = 'commit'")
[ ${#X} = 40 ] || fail "no commit artifact of the refused run: [$X]"
ok
# the remote takes pushes again: recovery's retry carries the goal through
rm -f "$T/refused.git/refs/goald/$GID.lock"
daemon_completes "$T/refused.git" "after the refusal"
not_in_history "$T/refused.git" "$X" "the refused run's"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$GID' AND type = 'worktree.moved' AND json_extract(payload, '\$.from') = '$X' AND json_extract(payload, '\$.to') = '$BASE'")" 1 \
    "the goal branch moved back to the database's head (the base)"

# --- 5. intake ---------------------------------------------------------------
db_use intake
printf '{"title": "u", "repo": "ssh://git@example.com/acme/widgets.git", "base_branch": "main"}' >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 0 "a URL with a base branch"
expect_eq "$(sql "SELECT repo FROM goals WHERE id = '$OUT'")" "ssh://git@example.com/acme/widgets.git" "the URL as given"
printf '{"title": "u", "repo": "git@example.com:acme/widgets.git", "base_branch": "dev"}' >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 0 "an scp-like URL"
printf '{"title": "u", "repo": "https://example.com/acme/widgets.git"}' >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 2 "a URL without a base branch"
expect_err "base_branch: required with a git URL"
printf '{"title": "u", "repo": "%s", "base_branch": "nope"}' "$T/chain.git" >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 2 "a bare repository without the base branch"
expect_err "base_branch: no branch \"nope\""
printf '{"title": "u", "repo": "%s"}' "$T/chain.git" >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 0 "a bare repository, its HEAD's branch as the base"
expect_eq "$(sql "SELECT repo || ' ' || base_branch FROM goals WHERE id = '$OUT'")" "$T/chain.git main" "bare repo and base"
printf '{"title": "u", "repo": "%s/nowhere", "base_branch": "main"}' "$T" >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 2 "neither a repository nor a URL"
expect_err "repo: not a git repository"
printf '{"title": "u", "repo": "%s", "publish": {"push": true, "remote": "upstream"}}' "$T/chain.git" >"$T/u.json"
run "$G" submit "$T/u.json"
expect_rc 2 "a named remote other than origin in clone mode"
expect_err "publish.remote: a goal whose repo is a git URL or a bare repository publishes to \"origin\""
done_tests
