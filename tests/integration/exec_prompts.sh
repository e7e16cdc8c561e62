#!/usr/bin/env bash
# What the execute and review prompts tell the model, and how the item's
# commit reads, read from the requests goald sends (the fake's log):
#   - a retry's worktree: the prompt says it was reset to the item's start,
#     sums up the discarded patch (files, +/- lines), says where goald keeps
#     it and shows its hunks; the context pack moves the failed attempt's
#     steps and files under discarded_steps / discarded_files;
#   - the failing gate's output appears once, cut between lines, and says
#     which tree it ran on;
#   - the review gets the item's description and the goal's criteria, and
#     its prompt offers correctness and tests and says what a verdict does;
#   - the commit: subject = the item's title cut at 72 characters, body
#     wrapped at 72, the gates said once (Gates trailer, no Evidence line);
#   - item 2's prompt lists item 1 (key, title, commit, summary) as done
#     before it, its commit in the worktree.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1

R="$T/repo"
make_repo "$R"
mkdir -p "$R/tests"
cat >"$R/test.sh" <<'EOF'
#!/bin/sh
fail=0
for t in tests/*.sh; do sh "$t" || fail=1; done
exit $fail
EOF
printf 'echo "ok - nothing yet"\n' >"$R/tests/none_test.sh"
git -C "$R" add -A
git -C "$R" commit -q -m "test.sh"

TITLE1="Add mul.sh, a shell script that multiplies its two integer arguments and prints the product"
MUL_TEST='i=0; while [ $i -lt 300 ]; do echo "noise line $i: les données ne changent pas"; i=$((i+1)); done
got=$(sh mul.sh 2 3)
if [ "$got" = 6 ]; then echo "ok - mul 2 3"; else echo "not ok - mul 2 3: expected 6, got $got"; exit 1; fi
'
SUMMARY1="mul.sh multiplies its two arguments with shell arithmetic; tests/mul_test.sh checks 2 * 3 = 6 and the gate passes on the whole suite now."
ELAB2='{"components": ["mul.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0", "mul.sh 2 3 prints 6"], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
PLAN2=$(jq -nc --arg t "$TITLE1" '{work_items: [
  {key: "wi-1", title: $t, description: "multiply two numbers given as arguments", type: "code", priority: 80, effort: "S", critical: true, depends_on: []},
  {key: "wi-2", title: "Add sub.sh", description: "subtract", type: "code", priority: 50, effort: "S", critical: true, depends_on: ["wi-1"]}]}')
{
    printf '{"content": %s}\n{"content": %s}\n' "$ELAB2" "$PLAN2"
    # wi-1, attempt 1: mul.sh adds
    printf '{"tool_calls": [%s, %s]}\n' "$(write mul.sh "$(printf '#!/bin/sh\necho $(($1 + $2))\n')")" "$(write tests/mul_test.sh "$MUL_TEST")"
    printf '{"tool_calls": [%s]}\n' "$(complete "mul.sh added")"
    # attempt 2: mul.sh multiplies
    printf '{"tool_calls": [%s, %s]}\n' "$(write mul.sh "$(printf '#!/bin/sh\necho $(($1 * $2))\n')")" "$(write tests/mul_test.sh "$MUL_TEST")"
    printf '{"tool_calls": [%s]}\n' "$(complete "$SUMMARY1")"
    printf '{"content": %s}\n' "$REVIEW"
    # wi-2
    printf '{"tool_calls": [%s]}\n' "$(write sub.sh "$(printf '#!/bin/sh\necho $(($1 - $2))\n')")"
    printf '{"tool_calls": [%s]}\n' "$(complete "sub.sh added")"
    printf '{"content": %s}\n' "$REVIEW"
} >"$T/script.jsonl"
start_fake_llm llm openai "$T/script.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh prompts "$R" ', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'
step plan; step plan
I1=$(sql "SELECT id FROM work_items WHERE key='wi-1'")

# wi-1 attempt 1 fails on the gate; the worktree is reset, the patch kept
step work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "attempt 1"
PATCH=$(sql "SELECT path FROM artifacts WHERE type='patch' AND item_id='$I1'")
[ -s "$PATCH" ] || fail "no saved patch: $PATCH"
ok

# attempt 2: its task tells the truth about the worktree
step work
expect_eq "$(jqo .status)" success "attempt 2"
jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" >"$T/prompts"
# the tools say what complete checks beyond run_gates
cdesc=$(jq -r 'select(.headers["x-goald-stage"] == "execute") | .body.tools[] | select(.function.name == "complete") | .function.description' "$FAKE_LOG" | head -n1)
case "$cdesc" in *"the original tests on your product without your test edits"*"new tests on the old code"*) ok ;;
    *) fail "complete's description does not say what it checks: $cdesc" ;; esac
retry=$(sed -n 3p "$T/prompts" | jq -r .)
case "$retry" in *"The worktree was reset to the item's start"*"NOT in it"*) ok ;;
    *) fail "the retry does not say the worktree was reset: $retry" ;; esac
case "$retry" in *"kept by goald in $PATCH"*) ok ;; *) fail "the retry does not say where the patch is: $retry" ;; esac
case "$retry" in *"mul.sh (+2 -0)"*"tests/mul_test.sh (+3 -0)"*) ok ;;
    *) fail "the retry lacks the patch's summary: $retry" ;; esac
case "$retry" in *'+echo $(($1 + $2))'*) ok ;; *) fail "the retry lacks the patch's hunks: $retry" ;; esac
pack=$(printf '%s' "$retry" | sed -n '/(context pack):$/{n;p}')
expect_eq "$(printf '%s' "$pack" | jq -c '[.completed_steps, .files_touched, .discarded_files, (.discarded_steps | length), (.worktree | startswith("reset"))]')" \
    '[[],[],["mul.sh","tests/mul_test.sh"],3,true]' "the pack's steps"
# the gate's output: once, whole lines, from the item's tree
expect_eq "$(printf '%s' "$retry" | grep -c 'not ok - mul 2 3: expected 6, got 5')" 1 "the failing line, once"
case "$retry" in *"Output of gate tests (exit 1), run on the item's tree"*"earlier lines left out]"*) ok ;;
    *) fail "the output's source or cut note: $retry" ;; esac
out=$(printf '%s' "$retry" | sed -n '/^Output of gate tests/,$p' | sed -n '3p')
case "$out" in "noise line "*": les données ne changent pas") ok ;; *) fail "the output starts inside a line: [$out]" ;; esac

# the review: the item's description and the criteria; what a verdict does
rv=$(jq -c 'select(.headers["x-goald-stage"] == "review")' "$FAKE_LOG" | head -1)
user=$(printf '%s' "$rv" | jq -r '.body.messages[1].content')
sys=$(printf '%s' "$rv" | jq -r '.body.messages[0].content')
case "$user" in *"multiply two numbers given as arguments"*"- sh test.sh exits 0"*"- mul.sh 2 3 prints 6"*) ok ;;
    *) fail "the review lacks the description or criteria: $user" ;; esac
case "$sys" in *"advisory"*"correctness|tests|code_smell|security|performance"*) ok ;;
    *) fail "the review prompt: $sys" ;; esac
case "$sys" in *'"concerns" asks them to look before merging'*) ok ;; *) fail "the review prompt does not say what concerns does: $sys" ;; esac

# the commit
SHA1=$(sql "SELECT commit_sha FROM work_items WHERE key='wi-1'")
subject=$(git -C "$R" log -1 --format=%s "$SHA1")
expect_eq "$subject" "Add mul.sh, a shell script that multiplies its two integer arguments and" "the subject"
msg=$(git -C "$R" log -1 --format=%B "$SHA1")
expect_eq "$(printf '%s\n' "$msg" | awk '{ if (length($0) > 72) n++ } END { print n + 0 }')" 0 "lines over 72"
case "$msg" in *"$TITLE1"*) fail "the long title should be wrapped in the body" ;; *) ok ;; esac
case "$(printf '%s' "$msg" | tr '\n' ' ')" in *"$TITLE1"*) ok ;; *) fail "the body lacks the whole title: $msg" ;; esac
expect_eq "$(printf '%s\n' "$msg" | grep -c '^Gates: ')" 1 "one Gates trailer"
expect_eq "$(printf '%s\n' "$msg" | grep -c 'Evidence:')" 0 "no Evidence line"
expect_eq "$(git -C "$R" log -1 --format='%(trailers:key=Gates,valueonly)' "$SHA1" | head -1)" "tests=pass"

# wi-2: its task lists wi-1, done before it
step work
expect_eq "$(jqo .status)" success "wi-2"
jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" >"$T/prompts"
w2=$(sed -n 5p "$T/prompts" | jq -r .)
case "$w2" in *"Your work item wi-2"*) ok ;; *) fail "not wi-2's prompt: $w2" ;; esac
case "$w2" in *"Items of this goal done before yours (the worktree already holds their commits"*"- wi-1: $TITLE1 (commit ${SHA1:0:12}): mul.sh multiplies"*) ok ;;
    *) fail "wi-2's prompt lacks wi-1: $w2" ;; esac
first=$(sed -n 1p "$T/prompts" | jq -r .)
case "$first" in *"done before yours"*) fail "wi-1 had nothing before it" ;; *) ok ;; esac
case "$first" in *"worktree was reset"*) fail "a first attempt has no reset to tell" ;; *) ok ;; esac

done_tests
