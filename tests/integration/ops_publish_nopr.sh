#!/usr/bin/env bash
# Submit refuses `publish.pull_request: true` when the
# goal's remote cannot take a pull request (a plain path or file:// remote,
# a host without a configured forge), naming the field; nothing is stored.
# A publish escalation offers only actions that work: retry publishes
# again, skip completes the goal without push or pull request, pause says
# the state it leaves; complete_partial is not offered.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

make_project "$T/repo"
git init -q --bare "$T/bare.git"
pr='{"push": true, "remote": "origin", "pull_request": true}'

refused() { # REMOTE-URL WHAT
    git -C "$T/repo" remote remove origin 2>/dev/null || true
    git -C "$T/repo" remote add origin "$1"
    goal_json "$T/repo" "a pull request on $1" "$pr" >"$T/g.json"
    run "$G" submit "$T/g.json"
    expect_rc 2 "submit with remote $1"
    expect_err "publish.pull_request" "the field is named ($1)"
    expect_err "$2" "the cause ($1)"
    expect_eq "$(sql "SELECT count(*) FROM goals" 2>/dev/null || echo 0)" 0 "goals stored ($1)"
}
refused "file://$T/bare.git" "is a local path"
refused "$T/bare.git" "is a local path"
refused "https://git.example.com/acme/widgets.git" "no forge is configured for it"
refused "git@git.example.com:acme/widgets.git" "no forge is configured for it"

# accepted: github.com with the default forge, or any remote whose forge
# the configuration names
git -C "$T/repo" remote set-url origin https://github.com/acme/widgets.git
run "$G" submit "$T/g.json"
expect_rc 0 "submit with a github.com remote"
git -C "$T/repo" remote set-url origin "file://$T/bare.git"
run env GOALD_FORGE_BASE_URL=http://127.0.0.1:1 GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets \
    "$G" submit "$T/g.json"
expect_rc 0 "submit with a configured forge"
# pull_request false needs no forge
goal_json "$T/repo" "push only" '{"push": true, "remote": "origin", "pull_request": false}' >"$T/g.json"
run "$G" submit "$T/g.json"
expect_rc 0 "submit without a pull request"

# --- a publish escalation: what each offered action does ------------------------
db_reset
export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1 GOALD_CONTROL_MAX_RETRIES=0
export GOALD_LLM_SCRIPT="$T/s.jsonl"
script_generic 2 >"$GOALD_LLM_SCRIPT"
make_project "$T/r1"
goal_json "$T/r1" "push to a missing remote" '{"push": true, "remote": "origin", "pull_request": false}' >"$T/g1.json"
submit_goal "$T/g1.json"
g1=$GOAL_ID
run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once with a failing push"
esc=$(sql "SELECT id FROM escalations WHERE goal_id = '$g1' AND status = 'open'")
[ -n "$esc" ] || fail "no publish escalation"
ok
expect_eq "$(sql "SELECT json_extract(packet, '\$.actions') FROM escalations WHERE id = '$esc'")" \
    '["retry","skip","pause"]' "actions of a publish escalation"
expect_eq "$(sql "SELECT json_extract(packet, '\$.scope') FROM escalations WHERE id = '$esc'")" publish "scope"
opts=$(sql "SELECT group_concat(json_extract(value, '\$.option')) FROM escalations, json_each(json_extract(packet, '\$.analysis.options')) WHERE escalations.id = '$esc'")
expect_eq "$opts" "retry,skip,pause" "the options are the actions"
q=$(sql "SELECT json_extract(packet, '\$.minimal_question') FROM escalations WHERE id = '$esc'")
case "$q" in *"Publishing failed"*origin*) ok ;; *) fail "publish question lacks the cause: $q" ;; esac
run "$G" resolve "$esc" --action complete_partial
expect_rc 2 "complete_partial is not offered"
expect_err "accepts retry, skip, pause" "the refusal lists the actions"
# pause: says the state it really leaves
run "$G" resolve "$esc" --action pause
expect_rc 0 "pause"
expect_out "goal ${g1:0:8} is $(sql "SELECT status FROM goals WHERE id = '$g1'")" "pause reports the goal's real state"
# skip: completes without publishing, once
run "$G" resolve "$esc" --action skip
expect_rc 0 "skip"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once after skip"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$g1'")" completed "goal after skip"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE goal_id = '$g1'")" 1 "no new escalation after skip"
br=$(sql "SELECT branch FROM goals WHERE id = '$g1'")
git -C "$T/r1" rev-parse -q --verify "refs/heads/$br" >/dev/null || fail "the commits are not on the local branch"
ok
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$g1' AND type = 'publish.skipped'")" 1 "publish.skipped"

# retry: the cause fixed, publishing again pushes
make_project "$T/r2"
goal_json "$T/r2" "push once the remote exists" '{"push": true, "remote": "origin", "pull_request": false}' >"$T/g2.json"
submit_goal "$T/g2.json"
g2=$GOAL_ID
run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once, second goal"
esc=$(sql "SELECT id FROM escalations WHERE goal_id = '$g2' AND status = 'open'")
git init -q --bare "$T/r2.git"
git -C "$T/r2" remote add origin "file://$T/r2.git"
run "$G" resolve "$esc" --action retry
expect_rc 0 "retry"
run timeout 120 "$G" daemon --once
expect_rc 0 "daemon --once after retry"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$g2'")" completed "goal after retry"
br=$(sql "SELECT branch FROM goals WHERE id = '$g2'")
expect_eq "$(git -C "$T/r2.git" rev-parse "refs/heads/$br")" "$(git -C "$T/r2" rev-parse "refs/heads/$br")" "pushed"
done_tests
