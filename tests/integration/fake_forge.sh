#!/usr/bin/env bash
# The fake forge itself: the GitHub shape other tests rely on.
. "$(dirname "$0")/lib.sh"

forge_start --require-token tok-123
A=(-H "Authorization: token tok-123" -H "Content-Type: application/json")

# without the token: 401, nothing created
run curl -s -o /dev/null -w '%{http_code}' -X POST "$FORGE_URL/repos/acme/w/pulls" -d '{}'
expect_eq "$OUT" 401 "no token"

# create, with GitHub's answer shape
run curl -s "${A[@]}" -X POST "$FORGE_URL/repos/acme/w/pulls" \
    -d '{"title":"T","head":"goald/x-1","base":"main","body":"B"}'
expect_rc 0
expect_eq "$(jqo .number)" 1 number
expect_eq "$(jqo .html_url)" "$FORGE_URL/acme/w/pull/1" html_url
expect_eq "$(jqo .head.ref)" goald/x-1 head.ref

# a second open one for the same head: 422, as GitHub
run curl -s -o /dev/null -w '%{http_code}' "${A[@]}" -X POST "$FORGE_URL/repos/acme/w/pulls" \
    -d '{"title":"T2","head":"goald/x-1","base":"main","body":"B"}'
expect_eq "$OUT" 422 duplicate

# the Bearer scheme and the Gitea path see the same store
run curl -s -H "Authorization: Bearer tok-123" \
    "$FORGE_URL/api/v1/repos/acme/w/pulls?state=open&head=acme:goald/x-1"
expect_eq "$(jqo 'length')" 1 "list by head"
expect_eq "$(jqo '.[0].title')" T title
run curl -s "${A[@]}" "$FORGE_URL/repos/acme/w/pulls?state=open&head=acme:goald/other"
expect_eq "$(jqo 'length')" 0 "other head"

# webhook receiver
run curl -s -o /dev/null -w '%{http_code}' -X POST "$FORGE_URL/hook" -d '{"event":"x"}'
expect_eq "$OUT" 200 hook

# the log: one line per request, token never written
expect_eq "$(wc -l <"$FORGE_LOG" | tr -d ' ')" 6 "log lines"
expect_eq "$(forge_count POST /repos/acme/w/pulls)" 3 "POST count"
expect_eq "$(jq -s '[.[] | select(.status == 201)] | length' "$FORGE_LOG")" 1 "created"
expect_eq "$(jq -rs '.[1].json.body' "$FORGE_LOG")" B "logged body"
expect_eq "$(jq -rs '.[1].headers.Authorization' "$FORGE_LOG")" "token ***" "redacted"
if grep -q tok-123 "$FORGE_LOG"; then fail "token in the log"; fi
ok
done_tests
