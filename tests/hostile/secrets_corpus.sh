#!/usr/bin/env bash
# Redaction everywhere: the secrets corpus
# (tests/fixtures/secrets_corpus.txt, >= 30 secrets across the families of
# public secret scanners) is planted in a repository; the scripted model
# reads it (read, grep, bash cat), copies it into a new file (so that the
# review's diff holds it), runs the gates (one prints it) and completes; the
# goal ends in a pushed branch and a pull request on the fake forge.  No
# secret value may appear in any request sent to the model, the database,
# the daemon's and jobs' logs, or the fake forge's log (PR body included).
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

CORPUS="$GOALD_SOURCE_DIR/tests/fixtures/secrets_corpus.txt"
repo="$T/repo"
make_project "$repo"
# the file a repository would hold: the LINE column, escapes expanded
grep -v '^#' "$CORPUS" | grep -v '^-'"$(printf '\t')" | cut -f2- |
    while IFS= read -r l; do printf '%b\n' "$l"; done >"$repo/secrets.txt"
grep -v '^#' "$CORPUS" | grep -v '^-'"$(printf '\t')" | cut -f1 >"$T/values"
n=$(wc -l <"$T/values")
[ "$n" -ge 30 ] || fail "the corpus has $n secrets"; ok
# each value is really in the planted file (so that a search can fail)
while IFS= read -r v; do grep -qF -- "$v" "$repo/secrets.txt" || fail "corpus value $v not planted"; done <"$T/values"
ok
git -C "$repo" add secrets.txt && git -C "$repo" commit -q -m "config with secrets"
git init -q --bare "$T/origin.git"
git -C "$repo" remote add origin "file://$T/origin.git"

forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=widgets
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["sh test.sh exits 0"],"allowed_actions":["read","grep","edit","bash","run_gates"],"verification":[]}}'
    echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"fix add.sh","description":"make it add","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]}]}}'
    echo '{"stage":"execute","tool_calls":[{"name":"read","arguments":{"path":"secrets.txt"}},{"name":"grep","arguments":{"pattern":"key|token|secret|pass|BEGIN|hooks|eyJ|://","path":".","ignore_case":true}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"cat secrets.txt; cp secrets.txt leaked.txt"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"edit","arguments":{"path":"add.sh","old_text":"$(($1 - $2))","new_text":"$(($1 + $2))"}},{"name":"run_gates","arguments":{}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"fixed add.sh; copied the settings to leaked.txt"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
} >"$T/script.jsonl"
start_fake_llm corpus openai "$T/script.jsonl"
goal_json "$repo" "fix add.sh" '{"push": true, "remote": "origin", "pull_request": true}' \
    "cat secrets.txt; sh test.sh" | jq '.success_criteria = ["sh test.sh exits 0"]' >"$T/goal.json"
submit_goal "$T/goal.json"
GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake GOALD_LOG_LEVEL=debug \
    "$G" daemon --once --log-file "$T/daemon.log" >"$T/daemon.out" 2>"$T/daemon.err"
RC=$? OUT=$(cat "$T/daemon.out") ERR=$(cat "$T/daemon.err")
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"
expect_eq "$(forge_count POST /repos/acme/widgets/pulls)" 1 "the pull request was opened"

# the model did see the corpus (redacted), the gate did print it, the
# review did get the copy in its diff: each place the search covers
bodies=$(jq -c .body "$FAKE_LOG")
grep -qF 'aws_access_key_id = ***REDACTED***' <<<"$bodies" || fail "the read result never reached the model"; ok
grep -q 'REDACTED' <<<"$(sql "SELECT output_tail FROM gate_results")" || fail "the gate's output was not stored"; ok
sqlite3 "$GOALD_DB" .dump >"$T/dump.sql"
prbody=$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/widgets/pulls")][0].json.body' "$FORGE_LOG")
[ -n "$prbody" ] || fail "no PR body"; ok
leaks=0
while IFS= read -r v; do
    for where in "$FAKE_LOG" "$T/dump.sql" "$T/daemon.log" "$T/daemon.err" "$T/daemon.out" "$FORGE_LOG"; do
        if grep -qF -- "$v" "$where"; then
            echo "LEAK: ${v:0:24}... in $(basename "$where")" >&2
            leaks=$((leaks + 1))
        fi
    done
    cat "$GOALD_DB"* | grep -qaF -- "$v" && { echo "LEAK: ${v:0:24}... in the database files" >&2; leaks=$((leaks + 1)); }
done <"$T/values"
expect_eq "$leaks" 0 "secrets found outside the repository"
# the review saw the copied file, redacted
review=$(jq -c 'select(.body.messages | tostring | test("Diff:")) | .body' "$FAKE_LOG")
grep -qF 'leaked.txt' <<<"$review" || fail "the review's diff did not hold the copy"; ok
grep -qF 'REDACTED' <<<"$review" || fail "the review's diff was not redacted"; ok
done_tests
