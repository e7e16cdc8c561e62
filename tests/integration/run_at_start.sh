#!/usr/bin/env bash
# run_at_start inside a run (fake OpenAI model, daemon --once): the new
# test the model wrote, laid over the item's start, fails there with the
# old code's output (what the model reads, and a run_at_start.completed
# event); what the command does to its copy never reaches the worktree;
# paths that are absolute, hold "..", are links or git metadata are
# refused with class policy, nothing run.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

repo="$T/repo"
make_project "$repo"
NEWTEST='#!/bin/sh\ngot=$(sh ./add.sh 1 1)\nif [ "$got" = 2 ]; then echo "ok 1 - add 1 1"; else echo "not ok 1 - add 1 1: got $got"; exit 1; fi\n'
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["sh test.sh exits 0"],"allowed_actions":["read","write","edit","bash"],"verification":[]}}'
    echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"fix add.sh","description":"make it add","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]}]}}'
    jq -nc --arg t "$(printf "$NEWTEST")" '{stage: "execute", tool_calls: [
        {name: "edit", arguments: {path: "add.sh", old_text: "$(($1 - $2))", new_text: "$(($1 + $2))"}},
        {name: "write", arguments: {path: "new_test.sh", content: $t}},
        {name: "bash", arguments: {command: "ln -s /etc/passwd lnk && mkdir -p sub && ln -s .. sub/up"}}]}'
    jq -nc '{stage: "execute", tool_calls: [
        {name: "run_at_start", arguments: {command: "echo junk >add.sh.orig; touch made_at_start; echo broken >>add.sh; sh new_test.sh", files: ["new_test.sh"]}},
        {name: "run_at_start", arguments: {command: "true", files: ["../etc/passwd"]}},
        {name: "run_at_start", arguments: {command: "true", files: ["/etc/passwd"]}},
        {name: "run_at_start", arguments: {command: "true", files: ["lnk"]}},
        {name: "run_at_start", arguments: {command: "true", files: ["sub/up/add.sh"]}},
        {name: "run_at_start", arguments: {command: "true", files: [".git/config"]}},
        {name: "bash", arguments: {command: "rm -r lnk sub; ls"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"add.sh adds; new_test.sh fails at the start"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
} >"$T/script.jsonl"
start_fake_llm start openai "$T/script.jsonl"
goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' "sh test.sh" >"$T/goal.json"
submit_goal "$T/goal.json"
GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake \
    "$G" daemon --once --log-file "$T/daemon.log" >"$T/daemon.out" 2>"$T/daemon.err"
RC=$? OUT=$(cat "$T/daemon.out") ERR=$(cat "$T/daemon.err")
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"

# the tool is offered where bash is allowed
req=$(jq -c 'select(.body.tools and (.body.messages | tostring | test("fails at the start") | not)) | .body' "$FAKE_LOG" |
    grep -F 'made_at_start' | grep -F '"role":"tool"' | tail -n1)
[ -n "$req" ] || fail "no request carried run_at_start's results"; ok
expect_eq "$(jq -r '[.tools[].function.name] | index("run_at_start") != null' <<<"$req")" true "run_at_start is offered"
results=$(jq -r '.messages[] | select(.role == "tool") | .content' <<<"$req")
# 1. the new test against the old code: it fails there, as the model reads
grep -qF 'laid over (differ from the start): new_test.sh (new)' <<<"$results" || fail "what was laid over is not said: $results"; ok
grep -qF 'exit 1, ' <<<"$results" || fail "no exit code: $results"; ok
grep -qF "on the item's start" <<<"$results" || fail "the start is not named: $results"; ok
grep -qF 'not ok 1 - add 1 1: got 0' <<<"$results" || fail "the old code's failure is not shown: $results"; ok
# 2. hostile paths: refused, nothing run
grep -qF 'run_at_start: ../etc/passwd: ".." is refused' <<<"$results" || fail "'..' not refused: $results"; ok
grep -qF 'run_at_start: /etc/passwd: an absolute path' <<<"$results" || fail "an absolute path not refused: $results"; ok
grep -qF 'run_at_start: lnk: lnk is a symbolic link' <<<"$results" || fail "a link not refused: $results"; ok
grep -qF 'run_at_start: sub/up/add.sh: up is a symbolic link' <<<"$results" || fail "a link on the way not refused: $results"; ok
grep -qF 'run_at_start: .git/config: git metadata is refused' <<<"$results" || fail "git metadata not refused: $results"; ok
if grep -q 'root:x:0' "$FAKE_LOG"; then fail "/etc/passwd reached the model"; fi
ok
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id='$GOAL_ID' AND type='tool_call.failed' AND json_extract(payload,'$.tool')='run_at_start' AND json_extract(payload,'$.error_class')='policy'")" 5 "the refusals are policy failures"
# 3. recorded: the event says what ran where and what it showed
ev=$(sql "SELECT payload FROM events WHERE goal_id='$GOAL_ID' AND type='run_at_start.completed'")
expect_eq "$(jq -r '.exit_code' <<<"$ev")" 1 "the event's exit code"
expect_eq "$(jq -r '.files | join(",")' <<<"$ev")" new_test.sh "the event's files"
case "$(jq -r .output_tail <<<"$ev")" in *"not ok 1 - add 1 1: got 0"*) ok ;; *) fail "the event lacks the output: $ev" ;; esac
expect_eq "$(jq -r .start <<<"$ev")" "$(git -C "$repo" rev-parse main)" "the event's start"
# 4. the worktree is untouched: the item's commit has the fix and no junk
branch=$(sql "SELECT branch FROM goals WHERE id='$GOAL_ID'")
expect_eq "$(git -C "$repo" show "$branch:add.sh" | tail -n1)" 'echo $(($1 + $2))' "the fix is kept as it was"
files=$(git -C "$repo" ls-tree --name-only "$branch")
case "$files" in *made_at_start* | *add.sh.orig*) fail "the copy's changes reached the worktree: $files" ;; *) ok ;; esac
case "$files" in *new_test.sh*) ok ;; *) fail "the new test is not committed: $files" ;; esac
grep -qx 'new_test.sh' <<<"$results" || fail "no ls of the worktree: $results"; ok
if grep -qx 'made_at_start' <<<"$results"; then fail "the copy's file is in the worktree: $results"; fi
ok
done_tests
