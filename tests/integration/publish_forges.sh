#!/usr/bin/env bash
# What forges really do, through the goald binary and the fake forge:
# 1. a goal pushed to a fork (its remote is OWNER=me's copy of the base
#    repository acme/widgets, served over HTTP by the fake's git door):
#    the pull request is asked of acme/widgets with head "me:BRANCH", and
#    the look-up asks for head=me:BRANCH (GitHub) — first through a GitHub
#    secondary rate limit (a 403 whose body says so, no header), which is
#    waited out (at least a minute, scaled), not taken for a bad token;
#    and a bare 429, waited a minute too;
# 2. Gitea: the look-up is GET /pulls/{base}/{head} (not the open pull
#    requests page by page), and finds the fork's open pull request.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_TIME_SCALE=0.01 # a minute is 600 ms
mkdir -p "$T/gitroot/me"
git init -q --bare "$T/gitroot/me/widgets.git"
forge_start --git-root "$T/gitroot"
export GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets

# submit_fork_goal NAME: the demo goal on a new project, pushed to remote
# "fork" (the fake's git door: http://.../git/me/widgets.git) with a pull
# request, on a database of its own.  Sets GOAL_ID and BR.
submit_fork_goal() {
    db_use "$1"
    export GOALD_LLM_SCRIPT="$T/$1.jsonl"
    cp "$GOALD_SOURCE_DIR/share/demo.jsonl" "$GOALD_LLM_SCRIPT"
    make_project "$T/$1"
    git -C "$T/$1" remote add fork "$FORGE_URL/git/me/widgets.git"
    goal_json "$T/$1" "Fix add.sh ($1)" '{"push": true, "remote": "fork", "pull_request": true}' "sh test.sh" \
        >"$T/$1.json"
    submit_goal "$T/$1.json"
    BR=$(sql "SELECT branch FROM goals WHERE id = '$GOAL_ID'")
}
publish_goal() {
    submit_fork_goal "$1"
    run "$G" daemon --once
    expect_rc 0 "daemon --once ($1)"
}
inject() { curl -s -o /dev/null -X POST "$FORGE_URL/_fake/inject" -d "$1"; }
api_log() { jq -c 'select(.api == true and (.path | startswith("/_fake") | not))' "$FORGE_LOG"; }

# --- 1. GitHub: a fork, through a secondary rate limit and a bare 429 --------
export GOALD_FORGE_BASE_URL="$FORGE_URL"
inject '{"status": 403, "method": "GET", "body": {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}}'
inject '{"status": 429, "method": "GET", "body": {"message": "Too Many Requests"}}'
publish_goal gh
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal (class of its last run: $(sql "SELECT error_class || ' ' || failure_reason FROM runs ORDER BY started_at DESC LIMIT 1"))"
expect_eq "$(git -C "$T/gitroot/me/widgets.git" rev-parse "refs/heads/$BR")" "$(git -C "$T/gh" rev-parse "refs/heads/$BR")" "the branch pushed to the fork"
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "pull requests opened on the base repository"
expect_eq "$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/widgets/pulls")][0].json.head' "$FORGE_LOG")" \
    "me:$BR" "the pull request's head names the fork's owner"
gets=$(api_log | jq -s -c '[.[] | select(.method == "GET" and .path == "/repos/acme/widgets/pulls")]')
expect_eq "$(jq -r '[.[].status] | join(" ")' <<<"$gets")" "403 429 200" "the look-ups: limited twice, then answered"
expect_eq "$(jq -r '.[2].query.head' <<<"$gets")" "me:$BR" "the look-up asks for the fork's head"
for i in 0 1; do
    dt=$(jq -r ".[$((i + 1))].t_ms - .[$i].t_ms" <<<"$gets")
    [ "${dt%.*}" -ge 550 ] || fail "waited ${dt} ms after a rate limit without a header (a minute at scale 0.01 is 600 ms)"
    ok
done
expect_eq "$(sql "SELECT count(*) FROM escalations")" 0 "escalations (a rate limit is no bad token)"

# --- 2. Gitea: the base/head route finds the fork's open pull request ---------
export GOALD_FORGE_BASE_URL="$FORGE_URL/api/v1"
: >"$FORGE_LOG"
# the fork's pull request already exists (a re-run), beside another
# fork's of the same branch name
submit_fork_goal gt
curl -s -o /dev/null -X POST "$FORGE_URL/_fake/seed" \
    -d "{\"repo\": \"acme/widgets\", \"prs\": [{\"head\": \"$BR\", \"base\": \"main\", \"title\": \"ours\", \"head_owner\": \"me\"}, {\"head\": \"$BR\", \"base\": \"main\", \"head_owner\": \"mallory\"}]}"
run "$G" daemon --once
expect_rc 0 "daemon --once (gitea)"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the Gitea goal"
expect_eq "$(jq -s '[.[] | select(.method == "GET" and .path == "/api/v1/repos/acme/widgets/pulls/main/me:'"$BR"'")] | length' "$FORGE_LOG")" 1 \
    "Gitea: one look-up by base and head"
expect_eq "$(jq -s '[.[] | select(.method == "GET" and .path == "/api/v1/repos/acme/widgets/pulls")] | length' "$FORGE_LOG")" 0 \
    "Gitea: no page-by-page scan"
expect_eq "$(forge_count POST /api/v1/repos/acme/widgets/pulls)" 0 "Gitea: the existing pull request is kept, none opened"
case "$(sql "SELECT group_concat(ifnull(ref, '') || ' ' || ifnull(url, ''), ' ') FROM artifacts WHERE goal_id = '$GOAL_ID' AND type = 'pull_request'")" in
    */acme/widgets/pull/2*) ok ;; # #2: ours (#1 is the GitHub goal's; #3 mallory's)
    *) fail "the goal's pull request: $(sql "SELECT type, ref FROM artifacts WHERE goal_id = '$GOAL_ID'")" ;;
esac
# a new branch: opened with the fork's head
submit_fork_goal gt2
run "$G" daemon --once
expect_rc 0 "daemon --once (gitea, new)"
expect_eq "$(jq -r -s '[.[] | select(.method == "POST" and .path == "/api/v1/repos/acme/widgets/pulls")][0].json.head' "$FORGE_LOG")" \
    "me:$BR" "Gitea: the pull request's head names the fork's owner"
done_tests
