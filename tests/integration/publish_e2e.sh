#!/usr/bin/env bash
# A goal end to end on a temporary repository with a bare remote
# (file://) and the fake forge: the commit on the goal's branch, checked
# with the real git CLI (log, trailers, fsck), pushed to the remote; the
# pull request with its title, head, base and evidence table; the webhook;
# the artifact rows; the goal completed; the worktree removed, the branch
# kept.  Then `goald demo` with the build's binary.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets
export GOALD_NOTIFY_WEBHOOK_URL="$FORGE_URL/hook"
export GOALD_LLM_SCRIPT="$T/demo.jsonl"
cp "$GOALD_SOURCE_DIR/share/demo.jsonl" "$GOALD_LLM_SCRIPT"

make_project "$T/repo"
git init -q --bare "$T/origin.git"
git -C "$T/repo" remote add origin "file://$T/origin.git"
base=$(git -C "$T/repo" rev-parse main)
goal_json "$T/repo" "Fix add.sh so that the tests pass" \
    '{"push": true, "remote": "origin", "pull_request": true}' "sh test.sh" |
    jq '.success_criteria = ["sh test.sh exits 0"]' >"$T/goal.json"
submit_goal "$T/goal.json"
gid=$GOAL_ID

run "$G" daemon --once
expect_rc 0 "daemon --once"

# --- the goal and its item --------------------------------------------------
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$gid'")" completed "goal status"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$gid' AND type = 'goal.completed'")" 1 \
    "goal.completed events"
iid=$(sql "SELECT id FROM work_items WHERE goal_id = '$gid'")
expect_eq "$(sql "SELECT status || ' ' || verified FROM work_items WHERE id = '$iid'")" "done 1" "item"
br=$(sql "SELECT branch FROM goals WHERE id = '$gid'")
expect_eq "$br" "goald/fix-add-sh-so-that-the-tests-pass-${gid:0:8}" "branch name"

# --- the commit, read with git ---------------------------------------------
sha=$(git -C "$T/repo" rev-parse "refs/heads/$br")
expect_eq "$(git -C "$T/repo" rev-list --count "main..$br")" 1 "commits on the branch"
expect_eq "$(git -C "$T/repo" rev-parse "$br^")" "$base" "the branch starts at main"
expect_eq "$(git -C "$T/repo" log -1 --format=%s "$br")" "Fix the addition in add.sh" "commit title"
expect_eq "$(git -C "$T/repo" log -1 --format='%an <%ae>' "$br")" "goald <goald@localhost>" "author"
expect_eq "$(git -C "$T/repo" log -1 --format='%(trailers:key=Goal-Id,valueonly)' "$br" | grep .)" "$gid" "Goal-Id"
expect_eq "$(git -C "$T/repo" log -1 --format='%(trailers:key=Work-Item-Id,valueonly)' "$br" | grep .)" "$iid" "Work-Item-Id"
expect_eq "$(git -C "$T/repo" log -1 --format='%(trailers:key=Gates,valueonly)' "$br" | grep .)" "tests=pass" "Gates"
expect_eq "$(git -C "$T/repo" diff --name-only "main..$br")" add.sh "changed files"
expect_eq "$(git -C "$T/repo" show "$br:add.sh" | tail -n1)" 'echo $(($1 + $2))' "the fix"
run git -C "$T/repo" fsck --strict --no-progress
expect_rc 0 "git fsck of the repository"
expect_eq "$(git -C "$T/repo" symbolic-ref --short HEAD)" main "the person's checkout stays on main"
expect_eq "$(git -C "$T/repo" status --porcelain)" "" "the person's checkout is untouched"

# --- pushed to the bare remote ------------------------------------------------
expect_eq "$(git -C "$T/origin.git" rev-parse "refs/heads/$br")" "$sha" "remote branch"
run git -C "$T/origin.git" fsck --strict --no-progress
expect_rc 0 "git fsck of the remote"

# --- the pull request on the fake forge ----------------------------------------
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "pull requests opened"
pr() { jq -r -s "[.[] | select(.method == \"POST\" and .path == \"/repos/acme/widgets/pulls\")][0].json.$1" "$FORGE_LOG"; }
expect_eq "$(pr title)" "Fix add.sh so that the tests pass" "PR title"
expect_eq "$(pr head)" "$br" "PR head"
expect_eq "$(pr base)" main "PR base"
body=$(pr body)
# One row per (criterion, item), with the item's key
case "$body" in *"| criterion | item | kind | what backs it |"*) ok ;; *) fail "PR body lacks the evidence table: $body" ;; esac
case "$body" in *"| sh test.sh exits 0 | wi-1 | gate | gate \`tests\` exit 0, output sha256"*) ok ;;
    *) fail "PR body lacks the criterion's evidence row: $body" ;; esac
case "$body" in *"Fix the addition in add.sh | done | yes | ${sha:0:12}"*) ok ;;
    *) fail "PR body lacks the item row with its commit: $body" ;; esac
case "$body" in *"| tests | pass (exit 0) |"*"3 passed, 0 failed"*) ok ;;
    *) fail "PR body lacks the gate results: $body" ;; esac

# --- the webhook ---------------------------------------------------------------
expect_eq "$(forge_count POST /hook)" 1 "webhook posts"
expect_eq "$(jq -r -s '[.[] | select(.path == "/hook")][0].json | .event + " " + .goal_id' "$FORGE_LOG")" \
    "goal.completed $gid" "webhook payload"

# --- artifact rows -------------------------------------------------------------
art() { sql "SELECT $2 FROM artifacts WHERE goal_id = '$gid' AND type = '$1'"; }
expect_eq "$(art commit "count(*)")" 1 "commit artifacts"
expect_eq "$(art commit "ref || ' ' || hash")" "$br $sha" "commit artifact"
expect_eq "$(art branch "ref || ' ' || hash || ' ' || url")" "$br $sha file://$T/origin.git" "branch artifact"
expect_eq "$(art pull_request "count(*)")" 1 "pull_request artifacts"
prurl=$(art pull_request url)
case "$prurl" in http*/pull/1) ok ;; *) fail "pull_request artifact url: $prurl" ;; esac
expect_eq "$(art pull_request "ref || ' ' || json_extract(meta, '\$.number')")" "#1 1" "pull_request artifact"
expect_eq "$(art file "path || ' ' || hash")" "add.sh $(git -C "$T/repo" show "$br:add.sh" | sha256sum | cut -d' ' -f1)" \
    "file artifact with the sha256 of the committed content"
expect_eq "$(art test_results "ref || ' ' || json_extract(meta, '\$.format') || ' ' || json_extract(meta, '\$.passed') || ' ' || json_extract(meta, '\$.failed')")" \
    "tests tap 3 0" "test_results artifact"
run "$G" report --json "$gid"
expect_rc 0 "report"
json_ok "report"

# --- the worktree is gone, the branch stays ------------------------------------
wt=$(sql "SELECT worktree FROM goals WHERE id = '$gid'")
[ -n "$wt" ] || fail "the goal has no worktree path"; ok
[ ! -e "$wt" ] || fail "worktree $wt still exists"; ok
case "$(git -C "$T/repo" worktree list --porcelain)" in *"$wt"*) fail "worktree still registered" ;; *) ok ;; esac
run git -C "$T/repo" rev-parse --verify -q "refs/heads/$br"
expect_rc 0 "the branch is kept"

# --- a second daemon run changes nothing ---------------------------------------
run "$G" daemon --once
expect_rc 0 "second daemon --once"
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "pull requests after a second run"
expect_eq "$(git -C "$T/repo" rev-list --count "main..$br")" 1 "commits after a second run"

# --- goald demo, with the build's binary ----------------------------------------
env -u GOALD_LLM_SCRIPT -u GOALD_FORGE_BASE_URL -u GOALD_NOTIFY_WEBHOOK_URL TMPDIR="$T" "$G" demo --keep >"$T/demo.out" 2>"$T/demo.err"
RC=$?
OUT=$(cat "$T/demo.out") ERR=$(cat "$T/demo.err")
expect_rc 0 "goald demo"
expect_out "demo: the goal completed with its gates passing"
demodir=$(sed -n 's/^goald demo in //p' "$T/demo.out")
expect_out "status   completed"
democommit=$(sed -n 's/^commit   //p' "$T/demo.out" | head -n1)
demobranch=$(sed -n 's/^branch   \([^ ]*\) .*/\1/p' "$T/demo.out" | head -n1)
expect_eq "$(git -C "$demodir/origin.git" rev-parse "refs/heads/$demobranch")" "$democommit" "the demo's pushed commit"
case "$demodir" in /tmp/goald-demo-*) rm -rf "$demodir" ;; esac
done_tests
