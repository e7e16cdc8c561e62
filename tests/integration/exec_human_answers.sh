#!/usr/bin/env bash
# A human's answers reach the model, and asking does not cost the work:
#   - an item that asks a human after editing keeps its changes: the run
#     after the answer starts with them in the worktree (a worktree.kept
#     event, no reset), its prompt says so, and the item completes from
#     them without writing them again, across two questions;
#   - the execute prompt lists every answer so far, newest first (the
#     retry's words, the alternative), and the escalate stage sees the
#     answers given before;
#   - an attempt that asked is not called "The previous attempt failed";
#     no line of the task ends in a colon with nothing after it;
#   - the context pack after two failed attempts lists only the latest
#     discarded attempt's steps (the one before counted), a refused
#     complete as refused, not "-> ok", a long bash command cut at a space
#     with "…", and the same failure twice once, with its count.
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

MUL_TEST='got=$(sh mul.sh 2 3)
if [ "$got" = 6 ]; then echo "ok - mul 2 3"; else echo "not ok - mul 2 3: expected 6, got $got"; exit 1; fi
'
ADD=$(write mul.sh "$(printf '#!/bin/sh\necho $(($1 + $2))\n')")
MUL=$(write mul.sh "$(printf '#!/bin/sh\necho $(($1 * $2))\n')")
TST=$(write tests/mul_test.sh "$MUL_TEST")
LONG="echo $(for i in $(seq 1 40); do printf 'word%02d ' "$i"; done)tail-end"
ESCALATE='{"root_cause": "r", "options": [{"option": "retry", "description": "d", "pros": "p", "cons": "c", "effort": "small"}], "minimal_question": "Q?"}'
ask() { jq -nc --arg q "$1" '{name: "ask_human", arguments: {question: $q}}'; }
{
    printf '{"content": %s}\n{"content": %s}\n' "$ELAB" "$(plan1 "Add mul.sh")"
    # attempts 1 and 2: mul.sh adds; the gate fails the same way twice
    printf '{"tool_calls": [%s, %s]}\n' "$ADD" "$TST"
    printf '{"tool_calls": [%s]}\n' "$(complete "mul.sh added")"
    printf '{"tool_calls": [%s, %s, %s]}\n' "$ADD" "$TST" "$(bash_call "$LONG")"
    printf '{"tool_calls": [%s]}\n' "$(complete "mul.sh added")"
    # attempt 3: the right change, then a question
    printf '{"tool_calls": [%s, %s]}\n' "$MUL" "$TST"
    printf '{"tool_calls": [%s]}\n' "$(ask "QUESTION-1: may mul.sh stay a shell script?")"
    printf '{"content": %s}\n' "$ESCALATE"
    # attempt 4: a second question, without a change
    printf '{"tool_calls": [%s]}\n' "$(ask "QUESTION-2: is the order of arguments right?")"
    printf '{"content": %s}\n' "$ESCALATE"
    # attempt 5: complete from the kept changes
    printf '{"tool_calls": [%s]}\n' "$(complete "mul.sh multiplies")"
    printf '{"content": %s}\n' "$REVIEW"
} >"$T/script.jsonl"
start_fake_llm llm openai "$T/script.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh answers "$R" ', "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]'
step plan; step plan
I1=$(sql "SELECT id FROM work_items WHERE key='wi-1'")

step work
expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/gate/retry "attempt 1"
step work
expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/gate/retry "attempt 2"

# attempt 3 asks after writing the right mul.sh: the change stays
step work
expect_eq "$(jqo .status)/$(sql "SELECT status FROM work_items")" success/blocked "attempt 3 asks"
WT=$(sql "SELECT worktree FROM goals")
grep -q '\$1 \* \$2' "$WT/mul.sh" 2>/dev/null || fail "the worktree lost mul.sh after the question: $(ls "$WT")"
ok
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
run "$G" resolve "$ESC" --action retry --input "ANSWER-1: yes, keep it a shell script"
expect_rc 0 "resolve retry"

# attempt 4: its worktree holds the change; its task says so, lists the
# answer, and does not call attempt 3 a failure
step work
R4=$RUN
expect_eq "$(sql "SELECT status FROM work_items")" blocked "attempt 4 asks"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$R4' AND type='worktree.kept'")" 1 "the kept event"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$R4' AND type='worktree.reset'")" 0 "no reset at attempt 4"
jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" >"$T/prompts"
p4=$(sed -n 7p "$T/prompts" | jq -r .)
case "$p4" in *"The worktree holds the changes from before the question"*"mul.sh (+2 -0), tests/mul_test.sh (+2 -0)"*) ok ;;
    *) fail "attempt 4 is not told its worktree holds the changes: $p4" ;; esac
case "$p4" in *"The worktree was reset"*) fail "attempt 4 is told of a reset: $p4" ;; *) ok ;; esac
case "$p4" in *"What a human decided about this item so far"*'- retry (to the agent'"'"'s question "QUESTION-1: may mul.sh stay a shell script?"): A human answered: ANSWER-1: yes, keep it a shell script'*) ok ;;
    *) fail "attempt 4 lacks the human's answer: $p4" ;; esac
case "$p4" in *"The previous attempt failed"*) fail "attempt 3 asked; it is called a failure: $p4" ;; *) ok ;; esac
case "$p4" in *"The previous attempt did not fail: it asked a human"*) ok ;; *) fail "attempt 4 is not told attempt 3 asked: $p4" ;; esac
# no dangling colon: a line ending in ':' has a line after it, not empty
dangling=$(printf '%s\n' "$p4" | awk 'prev != "" && prev ~ /:$/ && $0 == "" { print prev } { prev = $0 } END { if (prev ~ /:$/) print prev }')
expect_eq "$dangling" "" "lines ending in a dangling colon"
# the context pack
pack=$(printf '%s' "$p4" | sed -n '/(context pack):$/{n;p}')
expect_eq "$(printf '%s' "$pack" | jq -r '.discarded_steps | length')" 4 "discarded steps: attempt 2's only ($pack)"
case "$(printf '%s' "$pack" | jq -r .worktree)" in *"earlier discarded attempts, not listed: 1"*) ok ;;
    *) fail "the pack does not count the earlier attempt: $pack" ;; esac
expect_eq "$(printf '%s' "$pack" | jq -r '.discarded_steps[] | select(startswith("complete"))')" \
    "complete -> refused at verification (gate)" "the refused complete"
step_bash=$(printf '%s' "$pack" | jq -r '.discarded_steps[] | select(startswith("bash"))')
case "$step_bash" in "bash echo word01 "*" word"[0-9][0-9]"… -> ok") ok ;; *) fail "the bash step: [$step_bash]" ;; esac
expect_eq "$(printf '%s' "$pack" | jq -c '[.last_failures[] | [.class, .times]]')" '[["gate",2]]' "the same failure, once"
expect_eq "$(printf '%s' "$pack" | jq -r '.last_failures[0] | has("signature")')" false "no hash in the pack"
case "$(printf '%s' "$pack" | jq -r '.next_steps[0]')" in *:) fail "next step ends in a colon: $pack" ;; *) ok ;; esac
expect_eq "$(printf '%s' "$pack" | jq -c '.completed_steps')" \
    '["write mul.sh -> ok","write tests/mul_test.sh -> ok","ask_human -> ok"]' \
    "the steps whose changes the worktree holds"
# the escalate stage of attempt 4's question sees the first answer
esc=$(jq -c 'select(.headers["x-goald-stage"] == "escalate") | .body.messages[1].content' "$FAKE_LOG" | sed -n 2p | jq -r .)
case "$esc" in *"QUESTION-2"*"What a human answered for this item so far"*"ANSWER-1: yes, keep it a shell script"*) ok ;;
    *) fail "the escalate stage lacks the earlier answer: $esc" ;; esac
# ... and its attempts carry no ids nor hashes, nor the run still going
att=$(printf '%s\n' "$esc" | sed -n 's/^Attempts: //p')
expect_eq "$(printf '%s' "$att" | jq -c '[length, ([.[] | keys[]] | map(select(. == "run_id" or . == "signature" or . == "tier" or . == "model_index")) | length), ([.[] | select(.status == "running")] | length)]')" \
    '[3,0,0]' "the escalate stage's attempts ($att)"
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
run "$G" resolve "$ESC" --action alternative --input "APPROACH-2: the order does not matter"
expect_rc 0 "resolve alternative"

# attempt 5: both answers, newest first; it completes from the kept change
step work
expect_eq "$(jqo .status)/$(sql "SELECT status FROM work_items")" success/done "attempt 5"
jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$FAKE_LOG" >"$T/prompts"
p5=$(sed -n 8p "$T/prompts" | jq -r .)
answers=$(printf '%s\n' "$p5" | grep -oE '^- (retry|alternative) \(to the agent.s question "QUESTION-[0-9]' | tr '\n' '|')
expect_eq "$answers" "- alternative (to the agent's question \"QUESTION-2|- retry (to the agent's question \"QUESTION-1|" \
    "the answers, newest first"
case "$p5" in *'"): another approach to follow: APPROACH-2: the order does not matter'*) ok ;; *) fail "attempt 5 lacks the alternative: $p5" ;; esac
SHA=$(sql "SELECT commit_sha FROM work_items")
git -C "$R" show "$SHA:mul.sh" | grep -q '\$1 \* \$2' || fail "the commit lacks the kept mul.sh"
ok

done_tests
