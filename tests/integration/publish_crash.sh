#!/usr/bin/env bash
# Idempotent publishing.  A job killed (GOALD_FAULT, SIGKILL)
#   A. between the item's commit and its record (verify.after_commit),
#   B. between the push and the pull request (publish.after_push),
#   C. between the pull request and the goal's completion
#      (publish.after_pull_request);
# then `goald daemon --once` recovers: one commit per item, one pull
# request POST, one artifact of each kind, the goal completed.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets
export GOALD_CONTROL_BACKOFF_BASE_MS=50 GOALD_DAEMON_TICK_MS=100

# step LANE [FAULT]: claim one unit and run its job (with GOALD_FAULT);
# leaves RUN and JRC.
step() {
    run "$G" claim --lane "$1"
    expect_rc 0 "claim --lane $1"
    RUN=$OUT
    set +e
    GOALD_FAULT=${2:-} "$G" job "$RUN" >"$T/job.out" 2>"$T/job.err"
    JRC=$?
    set -e
}
# posts BRANCH: pull request creations for that head
posts() { jq -s --arg h "$1" '[.[] | select(.method == "POST" and .path == "/repos/acme/widgets/pulls" and .json.head == $h)] | length' "$FORGE_LOG"; }

# setup NAME: a repository with a bare remote, a goal, its own script (the
# demo's, plus answers for a retried execute run: it changes nothing, the
# item's commit made before the crash is its artifact); sets GID.
setup() {
    make_project "$T/$1"
    git init -q --bare "$T/$1.git"
    git -C "$T/$1" remote add origin "file://$T/$1.git"
    goal_json "$T/$1" "publish crash $1" '{"push": true, "remote": "origin", "pull_request": true}' \
        "sh test.sh" >"$T/$1.json"
    export GOALD_LLM_SCRIPT="$T/$1.jsonl"
    { cat "$GOALD_SOURCE_DIR/share/demo.jsonl"
      for _ in 1 2 3; do
          echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"the fix is already committed"}}]}'
          echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
      done; } >"$GOALD_LLM_SCRIPT"
    submit_goal "$T/$1.json"
    GID=$GOAL_ID
}

# finish NAME: the daemon recovers and completes the goal; common checks.
finish() {
    run "$G" daemon --once
    expect_rc 0 "daemon --once after the crash ($1)"
    expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "goal $1"
    expect_eq "$(sql "SELECT count(*) FROM runs WHERE goal_id = '$GID' AND status = 'running'")" 0 "running runs ($1)"
    BR=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
    expect_eq "$(git -C "$T/$1" rev-list --count "main..$BR")" 1 "commits on the branch ($1)"
    expect_eq "$(commits_per_item "$T/$1" "$BR" main)" 1 "commits per Work-Item-Id ($1)"
    expect_eq "$(git -C "$T/$1.git" rev-parse "refs/heads/$BR")" "$(git -C "$T/$1" rev-parse "refs/heads/$BR")" "pushed ($1)"
    expect_eq "$(posts "$BR")" 1 "pull request POSTs ($1)"
    for a in commit branch pull_request; do
        expect_eq "$(sql "SELECT count(*) FROM artifacts WHERE goal_id = '$GID' AND type = '$a'")" 1 "$a artifacts ($1)"
    done
    expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$GID' AND type = 'goal.completed'")" 1 "goal.completed ($1)"
    [ ! -e "$(sql "SELECT worktree FROM goals WHERE id = '$GID'")" ] || fail "worktree left ($1)"; ok
}

# --- A: killed after the commit, before the item is recorded done ------------
setup a
step plan; expect_eq "$JRC" 0 "elaborate"
step plan; expect_eq "$JRC" 0 "plan"
step work verify.after_commit
expect_eq "$JRC" 137 "the execute job died by SIGKILL"
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$RUN'")" running "the killed run"
br=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
expect_eq "$(git -C "$T/a" rev-list --count "main..$br")" 1 "the commit made before the crash"
expect_eq "$(sql "SELECT status FROM work_items WHERE goal_id = '$GID'")" verify "item before recovery"
finish a
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$RUN'")" aborted "the killed run after recovery"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE goal_id = '$GID' AND kind = 'execute' AND status = 'success'")" 1 \
    "the item's retry"
expect_eq "$(sql "SELECT commit_sha FROM work_items WHERE goal_id = '$GID'")" "$(git -C "$T/a" rev-parse "$BR")" \
    "the retry recorded the commit made before the crash"

# --- B: killed after the push, before the pull request -----------------------
setup b
step plan; step plan; step work; expect_eq "$JRC" 0 "execute"
step work publish.after_push
expect_eq "$JRC" 137 "the publish job died by SIGKILL"
br=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
run git -C "$T/b.git" rev-parse --verify -q "refs/heads/$br"
expect_rc 0 "pushed before the crash"
expect_eq "$(posts "$br")" 0 "no pull request before the crash"
finish b

# --- C: killed after the pull request, before the goal's completion ----------
setup c
step plan; step plan; step work; expect_eq "$JRC" 0 "execute"
step work publish.after_pull_request
expect_eq "$JRC" 137 "the publish job died by SIGKILL"
br=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
expect_eq "$(posts "$br")" 1 "the pull request opened before the crash"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" active "goal before recovery"
finish c
expect_eq "$(jq -s --arg h "acme:$BR" '[.[] | select(.method == "GET" and .query.head == $h)] | length' "$FORGE_LOG")" 2 \
    "the re-run looked for the pull request first (one GET per publish run)"
done_tests
