#!/usr/bin/env bash
# `/goald` commands in an issue's comments (docs/forge.md), through the
# goald binary and the fake forge: the goal of a labelled issue is blocked
# on an escalation (the forge refuses the pull request's token); goald's
# comment on the issue says it needs a human and how to answer;
# `/goald retry` from someone who may not push does nothing (a log line);
# the same from a collaborator resolves the escalation, and the goal goes
# on to its pull request, whose body closes the issue.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1
forge_start --require-token right-token
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets
export GOALD_FORGE_TOKEN=wrong-token GOALD_TRIGGER_TOKEN=right-token
export GOALD_LLM_SCRIPT="$T/demo.jsonl"
cp "$GOALD_SOURCE_DIR/share/demo.jsonl" "$GOALD_LLM_SCRIPT"
make_project "$T/repo"
git init -q --bare "$T/origin.git"
git -C "$T/repo" remote add origin "file://$T/origin.git"
GOALD_FORGE_TRIGGERS=$(jq -nc --arg url "$FORGE_URL" --arg local "$T/repo" '[{
    name: "widgets", base_url: $url, repo: "acme/widgets", local_repo: $local,
    token_env: "GOALD_TRIGGER_TOKEN",
    template: {verification: [{name: "tests", type: "test", command: "sh test.sh", must_pass: true, timeout_s: 60}],
               budget: {max_tokens: 10000000},
               publish: {push: true, remote: "origin", pull_request: true}}}]')
export GOALD_FORGE_TRIGGERS GOALD_FORGE_POLL_INTERVAL_S=1 GOALD_LOG_LEVEL=info
fake() { curl -s -o /dev/null -w '%{http_code}' -X POST "$FORGE_URL/_fake/$1" -d "$2"; }
bot_comment() { curl -s "$FORGE_URL/_fake/state" | jq -r '[.issues[] | select(.number == 5) | ._comments[] | select(.user.login == "goald-bot")] | .[0].body'; }

expect_eq "$(fake collaborator '{"repo": "acme/widgets", "login": "alice", "permission": "write"}')" 200 "seed alice"
expect_eq "$(fake issue '{"repo": "acme/widgets", "number": 5, "title": "Fix add.sh", "body": "- [ ] `sh test.sh` exits 0", "user": "alice", "labels": ["goald"], "labeler": "alice"}')" 201 "seed issue 5"

run "$G" daemon --once
expect_rc 3 "daemon --once (the goal, blocked at its pull request)"
GOAL_ID=$(sql "SELECT goal_id FROM forge_links WHERE issue_number = 5")
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" blocked "the goal"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'open'")" 1 "open escalations"

# the question goes on a public page: a secret in it is masked there
# (set through SQLite's JSON functions: not on PostgreSQL)
[ -n "${GOALD_TEST_PG:-}" ] || sql "UPDATE escalations SET packet = json_set(packet, '$.minimal_question', 'Is ghp_0123456789abcdefghijABCDEFGHIJ012345 the right token?') WHERE status = 'open'"
# a stranger's /goald retry: nothing
expect_eq "$(fake comment '{"repo": "acme/widgets", "number": 5, "user": "bob", "body": "/goald retry"}')" 201 "bob's comment"
run "$G" daemon --once
expect_rc 3 "daemon --once (bob's command)"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'open'")" 1 "open escalations after bob's /goald retry"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" blocked "the goal after bob's /goald retry"
case "$ERR" in *"by @bob, who may not push to the repository: ignored"*) ok ;; *) fail "no log line for bob's command: $ERR" ;; esac
case "$(bot_comment)" in *"goald needs a human"*"/goald retry"*) ok ;; *) fail "goald's comment does not ask for a human: $(bot_comment)" ;; esac
[ -n "${GOALD_TEST_PG:-}" ] || case "$(bot_comment)" in *ghp_0123456789*) fail "the comment shows the token: $(bot_comment)" ;; *"> Is "*"the right token?"*) ok ;; *) fail "the question is not quoted: $(bot_comment)" ;; esac

# a collaborator's: resolved; with the token fixed the goal reaches its pull request
expect_eq "$(fake comment '{"repo": "acme/widgets", "number": 5, "user": "alice", "body": "/goald retry the token is fixed now"}')" 201 "alice's comment"
export GOALD_FORGE_TOKEN=right-token
run "$G" daemon --once
expect_rc 0 "daemon --once (alice's command)"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'open'")" 0 "open escalations after alice's /goald retry"
expect_eq "$(sql "SELECT resolution FROM escalations")" retry "the escalation's resolution"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal after alice's /goald retry"
pr_body=$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/widgets/pulls" and .status == 201)][0].json.body' "$FORGE_LOG")
case "$pr_body" in *"Closes #5"*) ok ;; *) fail "the pull request body does not close the issue: $pr_body" ;; esac
# the next poll tells the issue about the pull request (the same comment)
run "$G" daemon --once
case "$(bot_comment)" in *"/acme/widgets/pull/1"*"ended: **completed**"*) ok ;; *) fail "goald's comment: $(bot_comment)" ;; esac
expect_eq "$(curl -s "$FORGE_URL/_fake/state" | jq '[.issues[] | select(.number == 5) | ._comments[] | select(.user.login == "goald-bot")] | length')" 1 \
    "goald's comments on the issue (edited in place)"
done_tests
