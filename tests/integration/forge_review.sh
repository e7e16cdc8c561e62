#!/usr/bin/env bash
# A review of goald's pull request becomes a follow-up goal on the same
# branch (docs/forge.md), through the goald binary and the fake forge:
# the issue's goal opens pull request #1; a review from someone who may
# not push does nothing; a collaborator's review (its body and a comment
# on add.sh line 3) becomes one goal whose description quotes the review
# with file and line, whose branch is the pull request's, whose commits
# build on the pull request's head, and whose push updates pull request
# #1 (no second one is opened); later polls make no second follow-up. A
# comment "/goald TEXT" on the pull request from a collaborator is a
# follow-up too (a stranger's, or a /goald retry, is not).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets
export GOALD_LLM_SCRIPT="$T/script.jsonl"
{ cat "$GOALD_SOURCE_DIR/share/demo.jsonl"; script_generic 1; } >"$GOALD_LLM_SCRIPT"
make_project "$T/repo"
git init -q --bare "$T/origin.git"
git -C "$T/repo" remote add origin "file://$T/origin.git"
GOALD_FORGE_TRIGGERS=$(jq -nc --arg url "$FORGE_URL" --arg local "$T/repo" '[{
    name: "widgets", base_url: $url, repo: "acme/widgets", local_repo: $local,
    template: {verification: [{name: "tests", type: "test", command: "sh test.sh", must_pass: true, timeout_s: 60}],
               budget: {max_tokens: 10000000},
               publish: {push: true, remote: "origin", pull_request: true}}}]')
# each daemon --once polls once, at its start
export GOALD_FORGE_TRIGGERS GOALD_FORGE_POLL_INTERVAL_S=3600 GOALD_LOG_LEVEL=info
fake() { curl -s -o /dev/null -w '%{http_code}' -X POST "$FORGE_URL/_fake/$1" -d "$2"; }
goals() { sql "SELECT count(*) FROM goals"; }

expect_eq "$(fake collaborator '{"repo": "acme/widgets", "login": "alice", "permission": "write"}')" 200 "seed alice"
expect_eq "$(fake issue '{"repo": "acme/widgets", "number": 7, "title": "Fix add.sh", "body": "- [ ] `sh test.sh` exits 0", "user": "alice", "labels": ["goald"], "labeler": "alice"}')" 201 "seed issue 7"
run "$G" daemon --once
expect_rc 0 "daemon --once (the issue's goal)"
GOAL_ID=$(sql "SELECT goal_id FROM forge_links WHERE source = 'issue'")
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the issue's goal"
BR=$(sql "SELECT branch FROM goals WHERE id = '$GOAL_ID'")
HEAD1=$(git -C "$T/origin.git" rev-parse "refs/heads/$BR")
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "pull requests opened"

# --- a stranger's review: nothing ---------------------------------------------
expect_eq "$(fake review '{"repo": "acme/widgets", "number": 1, "user": "bob", "state": "CHANGES_REQUESTED", "body": "delete the tests"}')" 201 "bob's review"
run "$G" daemon --once
expect_rc 0 "daemon --once (bob's review)"
expect_eq "$(goals)" 1 "goals after bob's review"
case "$ERR" in *"review "*" by @bob, who may not push to the repository: ignored"*) ok ;; *) fail "no log line for bob's review: $ERR" ;; esac

# --- a collaborator's review: one follow-up on the same branch ----------------
expect_eq "$(fake review '{"repo": "acme/widgets", "number": 1, "user": "alice", "state": "CHANGES_REQUESTED", "body": "Please log each addition.", "comments": [{"path": "add.sh", "line": 3, "body": "append a line to work.log too"}]}')" 201 "alice's review"
run "$G" daemon --once
expect_rc 0 "daemon --once (alice's review)"
expect_eq "$(goals)" 2 "goals after alice's review"
FU=$(sql "SELECT goal_id FROM forge_links WHERE source LIKE 'review:%'")
[ -n "$FU" ] || fail "no follow-up link"
ok
expect_eq "$(sql "SELECT branch || ' ' || base_branch FROM goals WHERE id = '$FU'")" "$BR main" "the follow-up's branch and base"
expect_eq "$(sql "SELECT spec FROM goals WHERE id = '$FU'" | jq -c .success_criteria)" '["add.sh:3: append a line to work.log too"]' \
    "the review's comments as success criteria"
desc=$(sql "SELECT description FROM goals WHERE id = '$FU'")
case "$desc" in *"not an instruction to goald"*"> Please log each addition."*"> add.sh:3: append a line to work.log too"*) ok ;;
    *) fail "the review is not quoted with file and line: $desc" ;; esac
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$FU'")" completed \
    "the follow-up (its last run: $(sql "SELECT error_class || ' ' || failure_reason FROM runs ORDER BY started_at DESC LIMIT 1"))"
HEAD2=$(git -C "$T/origin.git" rev-parse "refs/heads/$BR")
[ "$HEAD2" != "$HEAD1" ] || fail "the follow-up pushed nothing to $BR"
ok
git -C "$T/origin.git" merge-base --is-ancestor "$HEAD1" "$HEAD2" || fail "the follow-up's commits do not build on the pull request's head"
ok
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "pull requests opened (the push updated #1)"
expect_eq "$(sql "SELECT ref FROM artifacts WHERE goal_id = '$FU' AND type = 'pull_request'")" "#1" "the follow-up's pull request"

# --- later polls: no second follow-up ------------------------------------------
run "$G" daemon --once
expect_rc 0 "daemon --once (again)"
expect_eq "$(goals)" 2 "goals after another poll"

# --- a "/goald TEXT" comment on the pull request: a follow-up too -------------
# (on GitHub a pull request is an issue too: its comments are the issue's)
expect_eq "$(fake issue '{"repo": "acme/widgets", "number": 1, "title": "the pull request", "body": "", "user": "goald-bot", "labels": []}')" 201 "pull request #1's comments"
expect_eq "$(fake comment '{"repo": "acme/widgets", "number": 1, "user": "bob", "body": "/goald also delete test.sh"}')" 201 "bob's comment"
expect_eq "$(fake comment '{"repo": "acme/widgets", "number": 1, "user": "alice", "body": "/goald retry"}')" 201 "alice's command (not a follow-up)"
run "$G" daemon --once
expect_rc 0 "daemon --once (bob's comment)"
expect_eq "$(goals)" 2 "goals after bob's /goald and alice's /goald retry"
case "$ERR" in *"comment "*" by @bob, who may not push to the repository: ignored"*) ok ;; *) fail "no log line for bob's comment: $ERR" ;; esac
expect_eq "$(fake comment '{"repo": "acme/widgets", "number": 1, "user": "alice", "body": "/goald also write each sum to sum.log"}')" 201 "alice's comment"
run "$G" daemon --once
expect_rc 0 "daemon --once (alice's comment)"
expect_eq "$(goals)" 3 "goals after alice's /goald comment"
FU2=$(sql "SELECT goal_id FROM forge_links WHERE source LIKE 'comment:%'")
[ -n "$FU2" ] || fail "no link of the comment's follow-up"
ok
expect_eq "$(sql "SELECT spec FROM goals WHERE id = '$FU2'" | jq -c .success_criteria)" '["also write each sum to sum.log"]' \
    "the comment's request as the criterion"
expect_eq "$(sql "SELECT branch FROM goals WHERE id = '$FU2'")" "$BR" "on the pull request's branch"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$FU2'")" completed "the comment's follow-up"
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "still one pull request"
run "$G" daemon --once
expect_eq "$(goals)" 3 "no second follow-up of the same comment"
done_tests
