#!/usr/bin/env bash
# Root is not a key to the host: when goald runs as root, a file only root
# may read (0600, root's, under /etc, which the sandbox binds read-only) is
# out of reach of the model's bash and of a gate, while a world-readable one
# beside it is readable; and the whole flow still works as root: bash writes
# files goald made (the edit tool's, a fresh checkout's), the gate passes,
# the commit holds what bash wrote.  The repository sits in a folder only
# root may enter ($T is 0700), as /root would be.
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

if [ "$(id -u)" != 0 ]; then
    echo "skip: not root (this checks what root's commands may read)"
    done_tests
    exit 0
fi
SECRET=/etc/goald-test-secret-$$
PUBLIC=/etc/goald-test-public-$$
SVAL="root-only-$$-Zq8wLx"
PVAL="world-readable-$$-Kp3vTm"
trap 'rm -f "$SECRET" "$PUBLIC"; cleanup' EXIT
(umask 077 && printf '%s\n' "$SVAL" >"$SECRET")
printf '%s\n' "$PVAL" >"$PUBLIC"
chmod 0600 "$SECRET"
chmod 0644 "$PUBLIC"
[ "$(stat -c '%u %a' "$SECRET")" = "0 600" ] || fail "the secret is not root's 0600"; ok

# --- 1. the bash tool on its own ------------------------------------------
W="$T/wt"
mkdir -p "$W"
out=$("$G" tool bash --root "$W" --args "{\"command\": \"id -u; cat $PUBLIC; cat $SECRET; echo done\"}") ||
    fail "goald tool bash: $out"
text=$(jq -r .output <<<"$out")
case "$text" in *"$SVAL"*) fail "bash read a root-only file: $text" ;; esac; ok
case "$text" in *"$PVAL"*) ok ;; *) fail "bash cannot read a world-readable file: $text" ;; esac
case "$text" in *"Permission denied"*) ok ;; *) fail "no refusal for the secret: $text" ;; esac
[ "$(head -n1 <<<"$text")" != 0 ] || fail "the command ran as uid 0: $text"; ok

# --- 2. a whole goal: the model's bash and a gate --------------------------
repo="$T/repo"
make_project "$repo"
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["sh test.sh exits 0"],"allowed_actions":["read","edit","bash","run_gates"],"verification":[]}}'
    echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"fix add.sh","description":"make it add","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]}]}}'
    echo "{\"stage\":\"execute\",\"tool_calls\":[{\"name\":\"bash\",\"arguments\":{\"command\":\"id -u; cat $PUBLIC; cat $SECRET; cp $SECRET stolen.txt; echo from-bash >bash.txt\"}}]}"
    echo '{"stage":"execute","tool_calls":[{"name":"edit","arguments":{"path":"add.sh","old_text":"$(($1 - $2))","new_text":"$(($1 + $2))"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"echo \"# checked by bash\" >>add.sh && mkdir -p build && sh test.sh >build/test.out && echo bash-wrote-add"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"run_gates","arguments":{}},{"name":"complete","arguments":{"summary":"fixed add.sh"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
} >"$T/script.jsonl"
start_fake_llm rootfiles openai "$T/script.jsonl"
goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' \
    "cat $PUBLIC; cat $SECRET; sh test.sh" >"$T/goal.json"
submit_goal "$T/goal.json"
GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake "$G" daemon --once >"$T/daemon.out" 2>"$T/daemon.err"
RC=$? OUT=$(cat "$T/daemon.out") ERR=$(cat "$T/daemon.err")
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"

bodies=$(jq -c .body "$FAKE_LOG")
grep -qF "$PVAL" <<<"$bodies" || fail "the model's bash could not read a world-readable file"; ok
grep -qF 'bash-wrote-add' <<<"$bodies" || fail "bash could not write a file the edit tool made"; ok
gates=$(sql "SELECT group_concat(output_tail, ' ') FROM gate_results")
case "$gates" in *"$PVAL"*) ok ;; *) fail "the gate could not read a world-readable file: $gates" ;; esac
case "$gates" in *"Permission denied"*) ok ;; *) fail "the gate was not refused the secret: $gates" ;; esac
for where in "$FAKE_LOG" "$T/daemon.out" "$T/daemon.err"; do
    if grep -qF -- "$SVAL" "$where"; then fail "the root-only file was read: in $(basename "$where")"; fi
done
ok
if cat "$GOALD_DB"* | grep -qaF -- "$SVAL"; then fail "the root-only file was read: in the database"; fi; ok
# what bash wrote is committed on the goal's branch; the secret is not
branch=$(sql "SELECT branch FROM goals WHERE id = '$GOAL_ID'")
expect_eq "$(git -C "$repo" show "$branch:bash.txt")" from-bash "bash.txt on the goal's branch"
git -C "$repo" show "$branch:add.sh" | grep -q 'checked by bash' || fail "bash's change to add.sh was not committed"; ok
git -C "$repo" show "$branch:add.sh" | grep -qF '$(($1 + $2))' || fail "the fix was not committed"; ok
if git -C "$repo" grep -qF "$SVAL" "$branch" 2>/dev/null; then fail "the secret is on the goal's branch"; fi; ok
done_tests
