#!/usr/bin/env bash
# A forge outage delays a goal from an issue, never loses nor doubles it
# (docs/forge.md), through the goald binary and the fake forge:
# 1. the issues list answers 503: no goal, no ETag kept, a log line, and
#    the poll does not wait in line (one request, not forge.max_attempts);
# 2. the next poll makes the goal, once;
# 3. goald's comment fails (500): the next poll posts it, once;
# 4. a rate limit (403, x-ratelimit-remaining 0, resetting in an hour)
#    pauses the polls: the daemon's later polls ask nothing meanwhile.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

forge_start
make_project "$T/repo"
GOALD_FORGE_TRIGGERS=$(jq -nc --arg url "$FORGE_URL" --arg local "$T/repo" '[{
    name: "widgets", base_url: $url, repo: "acme/widgets", local_repo: $local,
    template: {budget: {max_tokens: 100000}}}]')
# each daemon --once polls once (at its start)
export GOALD_FORGE_TRIGGERS GOALD_FORGE_POLL_INTERVAL_S=3600 GOALD_LOG_LEVEL=info
export GOALD_LLM_SCRIPT="$T/none.jsonl"
: >"$GOALD_LLM_SCRIPT"
fake() { curl -s -o /dev/null -w '%{http_code}' -X POST "$FORGE_URL/_fake/$1" -d "$2"; }
goals() { sql "SELECT count(*) FROM goals"; }
bot_comments() { curl -s "$FORGE_URL/_fake/state" | jq '[.issues[] | select(.number == 4) | ._comments[] | select(.user.login == "goald-bot")] | length'; }
# poll: one daemon pass (the goal fails at once: its model script is
# empty; the poll is what is tested here)
poll() {
    run timeout 60 "$G" daemon --once
}

expect_eq "$(fake collaborator '{"repo": "acme/widgets", "login": "alice", "permission": "maintain"}')" 200 "seed alice"
expect_eq "$(fake issue '{"repo": "acme/widgets", "number": 4, "title": "Fix add.sh", "body": "fix it", "user": "alice", "labels": ["goald"], "labeler": "alice"}')" 201 "seed issue 4"

# --- 1. an outage ------------------------------------------------------------------
expect_eq "$(fake inject '{"status": 503, "method": "GET", "times": 1, "body": {"message": "unavailable"}}')" 200 "inject a 503"
poll
expect_eq "$(goals)" 0 "goals after a poll in an outage"
expect_eq "$(sql "SELECT count(*) FROM forge_state WHERE key LIKE 'etag:%'")" 0 "ETags kept after a poll in an outage"
expect_eq "$(forge_count GET /repos/acme/widgets/issues)" 1 "requests of the poll in an outage (no wait in line)"
case "$ERR" in *"tried again at the next poll"*) ok ;; *) fail "no log line for the outage: $ERR" ;; esac

# --- 2. the next poll, with goald's comment failing once ---------------------------
expect_eq "$(fake inject '{"status": 500, "method": "POST", "times": 1, "body": {"message": "broken"}}')" 200 "inject a 500 on POST"
poll
expect_eq "$(goals)" 1 "goals after the forge came back"
expect_eq "$(bot_comments)" 0 "goald's comments after the failed POST"
# --- 3. the comment, once ------------------------------------------------------------
poll
expect_eq "$(goals)" 1 "goals after another poll"
expect_eq "$(bot_comments)" 1 "goald's comments after the next poll"
poll
expect_eq "$(bot_comments)" 1 "goald's comments after one more poll"

# --- 4. a rate limit that resets in an hour pauses the polls -------------------------
sql "DELETE FROM forge_state WHERE key LIKE 'etag:%'"
: >"$FORGE_LOG"
expect_eq "$(fake inject '{"status": 403, "method": "GET", "times": 1, "reset_in": 3600, "headers": {"x-ratelimit-remaining": "0"}, "body": {"message": "API rate limit exceeded"}}')" 200 "inject a rate limit"
GOALD_FORGE_POLL_INTERVAL_S=1 "$G" daemon >"$T/daemon.out" 2>&1 &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
wait_until 10 grep -q "rate limit" "$T/daemon.out"
nap 2.5 # two more poll intervals
kill -TERM "$DPID"
wait "$DPID" || true
expect_eq "$(forge_count GET /repos/acme/widgets/issues)" 1 "polls while the rate limit lasts"
done_tests
