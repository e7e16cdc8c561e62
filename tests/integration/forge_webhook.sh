#!/usr/bin/env bash
# The forge's webhook (POST /v1/forge/webhook on `goald serve`, docs/forge.md),
# through the goald binary and the fake forge:
# 1. no signature, or a wrong one, is refused (401) and makes nothing;
# 2. GitHub's "issues labeled" event, signed (X-Hub-Signature-256), from a
#    collaborator starts the issue's goal at once and tells the issue;
#    the same delivery replayed makes no second goal, nor does the
#    daemon's poll afterwards;
# 3. a label put by someone who may not push makes nothing;
# 4. Gitea's shape (X-Gitea-Event, X-Gitea-Signature, "label_updated"
#    with the issue's labels) on a Gitea trigger starts its goal;
# 5. an event of another repository signed with the trigger's secret is
#    refused (422).
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

forge_start
make_project "$T/repo"
export GOALD_TEST_HOOK_SECRET=s3cret GOALD_TEST_GITEA_SECRET=other-secret
GOALD_FORGE_TRIGGERS=$(jq -nc --arg url "$FORGE_URL" --arg local "$T/repo" '[
    {name: "gh", base_url: $url, repo: "acme/widgets", local_repo: $local,
     webhook_secret_env: "GOALD_TEST_HOOK_SECRET",
     template: {budget: {max_tokens: 100000}}},
    {name: "gt", base_url: ($url + "/api/v1"), repo: "acme/gadgets", local_repo: $local,
     webhook_secret_env: "GOALD_TEST_GITEA_SECRET", label: "agent"}]')
export GOALD_FORGE_TRIGGERS GOALD_FORGE_POLL_INTERVAL_S=1
fake() { curl -s -o /dev/null -w '%{http_code}' -X POST "$FORGE_URL/_fake/$1" -d "$2"; }
goals() { sql "SELECT count(*) FROM goals"; }
hmac() { printf '%s' "$2" | openssl dgst -sha256 -hmac "$1" | awk '{print $NF}'; }
# hook BODY HEADER... : POST the webhook; $CODE and $ANS
hook() {
    local body=$1
    shift
    ANS=$(curl -s -w '\n%{http_code}' -X POST "$URL/v1/forge/webhook" -H 'Content-Type: application/json' "$@" --data-binary "$body")
    CODE=${ANS##*$'\n'}
    ANS=${ANS%$'\n'*}
}

for r in widgets gadgets; do
    expect_eq "$(fake collaborator "{\"repo\": \"acme/$r\", \"login\": \"alice\", \"permission\": \"admin\"}")" 200 "seed alice ($r)"
done
expect_eq "$(fake issue '{"repo": "acme/widgets", "number": 11, "title": "Fix add.sh", "body": "- [ ] add adds", "user": "alice", "labels": ["goald"], "labeler": "alice"}')" 201 "seed issue 11"
expect_eq "$(fake issue '{"repo": "acme/widgets", "number": 12, "title": "Mine", "body": "x", "user": "bob", "labels": ["goald"], "labeler": "bob"}')" 201 "seed issue 12"
expect_eq "$(fake issue '{"repo": "acme/gadgets", "number": 3, "title": "Gadget", "body": "y", "user": "alice", "labels": ["agent"], "labeler": "alice"}')" 201 "seed issue 3"

run "$G" migrate
expect_rc 0 "migrate"
GOALD_HTTP_PUBLIC_URL=https://goald.example.com/ GOALD_LOG_LEVEL=info "$G" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
FAKE_PIDS="$FAKE_PIDS $!"
wait_until 10 grep -q "serving" "$T/serve.out"
URL=$(awk '/serving/ {print $NF; exit}' "$T/serve.out")

gh_event() { # NUMBER SENDER
    jq -nc --argjson n "$1" --arg who "$2" '{action: "labeled", label: {name: "goald"},
        issue: {number: $n, title: "Fix add.sh", body: "- [ ] add adds", state: "open", user: {login: $who}},
        repository: {full_name: "acme/widgets"}, sender: {login: $who}}'
}
body=$(gh_event 11 alice)

# --- 1. unsigned, badly signed -------------------------------------------------
hook "$body" -H 'X-GitHub-Event: issues'
expect_eq "$CODE" 401 "no signature"
hook "$body" -H 'X-GitHub-Event: issues' -H "X-Hub-Signature-256: sha256=$(hmac wrong "$body")"
expect_eq "$CODE" 401 "a wrong signature"
hook "$body" -H 'X-GitHub-Event: issues' -H "X-Hub-Signature-256: sha256=$(hmac s3cret "$body x")"
expect_eq "$CODE" 401 "the signature of another body"
expect_eq "$(goals)" 0 "goals after refused webhooks"

# --- 2. signed: a goal at once; replayed: nothing more -------------------------
sig="sha256=$(hmac s3cret "$body")"
hook "$body" -H 'X-GitHub-Event: issues' -H "X-Hub-Signature-256: $sig"
expect_eq "$CODE" 202 "the signed event ($ANS)"
expect_eq "$(goals)" 1 "goals after the webhook"
GOAL_ID=$(sql "SELECT goal_id FROM forge_links WHERE issue_number = 11")
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" queued "the goal waits for the daemon"
expect_eq "$(curl -s "$FORGE_URL/_fake/state" | jq '[.issues[] | select(.number == 11) | ._comments[] | select(.body | contains("https://goald.example.com/#/goals/'"$GOAL_ID"'"))] | length')" 1 \
    "the issue is told at once, with the goal's page (http.public_url)"
hook "$body" -H 'X-GitHub-Event: issues' -H "X-Hub-Signature-256: $sig"
expect_eq "$CODE" 200 "the replayed event"
expect_eq "$(goals)" 1 "goals after the replay"

# --- 3. a label from someone who may not push ----------------------------------
body=$(gh_event 12 bob)
hook "$body" -H 'X-GitHub-Event: issues' -H "X-Hub-Signature-256: sha256=$(hmac s3cret "$body")"
expect_eq "$CODE" 200 "bob's label"
expect_eq "$(goals)" 1 "goals after bob's label"
grep -q "labelled goald by @bob, who may not push" "$T/serve.err" || fail "no log line for bob's label: $(cat "$T/serve.err")"
ok

# --- 4. Gitea ---------------------------------------------------------------------
body=$(jq -nc '{action: "label_updated", issue: {number: 3, title: "Gadget", body: "y", state: "open",
    user: {login: "alice"}, labels: [{name: "agent"}]}, repository: {full_name: "acme/gadgets"}, sender: {login: "alice"}}')
hook "$body" -H 'X-Gitea-Event: issues' -H "X-Gitea-Signature: $(hmac s3cret "$body")"
expect_eq "$CODE" 422 "Gitea's event signed with the other trigger's secret (not that trigger's repository)"
hook "$body" -H 'X-Gitea-Event: issues' -H "X-Gitea-Signature: $(hmac other-secret "$body")"
expect_eq "$CODE" 202 "Gitea's signed event ($ANS)"
expect_eq "$(sql "SELECT forge || ' ' || repo || ' ' || issue_number FROM forge_links WHERE repo = 'acme/gadgets'")" \
    "$FORGE_URL/api/v1 acme/gadgets 3" "the Gitea issue's link"

# --- 5. another repository under a trigger's secret --------------------------------
body=$(gh_event 11 alice | jq -c '.repository.full_name = "evil/repo"')
hook "$body" -H 'X-GitHub-Event: issues' -H "X-Hub-Signature-256: sha256=$(hmac s3cret "$body")"
expect_eq "$CODE" 422 "another repository's event"
expect_eq "$(goals)" 2 "goals"

# --- the daemon's poll afterwards finds the same issues: no second goal ------------
export GOALD_LLM_SCRIPT="$T/none.jsonl"
: >"$GOALD_LLM_SCRIPT"
run timeout 20 "$G" daemon --once
expect_eq "$(sql "SELECT count(*) FROM forge_links")" 2 "links after the poll"
expect_eq "$(sql "SELECT count(*) FROM goals")" 2 "goals after the poll"
done_tests
