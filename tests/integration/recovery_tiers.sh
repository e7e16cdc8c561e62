#!/usr/bin/env bash
# Four-tier recovery and escalation through real runs:
#   - scripted gate failures reach each tier in order: retry x max_retries
#     on model 0, failover to model 1, Plan B (its strategy in the next
#     prompt), escalation with a packet whose every field is filled;
#   - `auth` goes straight to tier 4;
#   - `goald resolve` with retry, alternative and skip (the input in the
#     next prompt, the strategy stored, dependents go on), and with pause,
#     increase_budget and complete_partial on a budget escalation (partial
#     in `report --json`);
#   - a non-critical item that exhausts recovery is skipped, its
#     dependents proceed.
# Two fake OpenAI servers stand for the two models of the chain; their
# request logs show every prompt.
. "$(dirname "$0")/lib.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=2

R="$T/repo"
make_repo "$R"
cat >"$R/test.sh" <<'EOF'
#!/bin/sh
[ -f mul.sh ] || exit 0
got=$(sh mul.sh 2 3)
if [ "$got" = 6 ]; then echo "ok - mul 2 3"; else echo "not ok - mul 2 3: expected 6, got $got"; exit 1; fi
EOF
git -C "$R" add -A; git -C "$R" commit -q -m tests

# attempt WORD SUMMARY: one execute reply writing a wrong mul.sh (it prints
# WORD, so that each failure has its own signature) and completing
attempt() {
    printf '{"content": "try %s", "tool_calls": [{"name": "write", "arguments": {"path": "mul.sh", "content": "#!/bin/sh\\necho %s\\n"}}, {"name": "complete", "arguments": {"summary": "%s"}}], "usage": {"input": 100, "output": 10}}\n' "$1" "$1" "$2"
}
AUTH='{"status": 401, "body": {"error": {"type": "invalid_request_error", "code": "invalid_api_key", "message": "Incorrect API key provided"}}}'
{
    echo '{"content": {"components": ["mul.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["read", "write", "edit", "bash"], "verification": []}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "Add mul.sh", "description": "multiply", "type": "code", "effort": "S", "critical": true}, {"key": "wi-2", "title": "Document mul.sh", "type": "doc", "effort": "S", "critical": true, "depends_on": ["wi-1"]}]}}'
    attempt alpha "tried alpha"
    attempt bravo "tried bravo"
    attempt charlie "tried charlie"
} >"$T/a.jsonl"
{
    attempt delta "tried delta"
    echo '{"content": {"strategy": "STRATEGY-XYZ: compute with expr", "reason": "arithmetic expansion kept failing"}}'
    attempt echo "tried echo with expr"
    echo '{"content": {"root_cause": "ROOT-CAUSE: mul.sh never multiplies", "options": [{"option": "retry", "description": "give a hint", "pros": "cheap", "cons": "may fail", "effort": "small"}, {"option": "alternative", "description": "use bc", "pros": "robust", "cons": "needs bc", "effort": "medium"}, {"option": "skip", "description": "drop mul", "pros": "goes on", "cons": "no mul", "effort": "none"}], "minimal_question": "MINIMAL: which tool should mul.sh use?"}}'
    echo "$AUTH"
    echo "$AUTH"
} >"$T/b.jsonl"
start_fake_llm a openai "$T/a.jsonl"; URL_A=$FAKE_URL; LOG_A=$FAKE_LOG
start_fake_llm b openai "$T/b.jsonl"; URL_B=$FAKE_URL; LOG_B=$FAKE_LOG
# (priced: a USD budget is refused on a model without a price)
export GOALD_LLM_MODELS="[{\"provider\":\"openai\",\"model\":\"ma\",\"base_url\":\"$URL_A\",\"price_in\":1,\"price_out\":2},{\"provider\":\"openai\",\"model\":\"mb\",\"base_url\":\"$URL_B\",\"price_in\":1,\"price_out\":2}]"

printf '{"title":"mul","repo":"%s","base_branch":"main","budget":{"max_tokens":10000000,"max_cost_usd":100},"verification":[{"name":"tests","type":"test","command":"sh test.sh","must_pass":true}]}' "$R" >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0; GID=$OUT
for _ in 1 2; do
    run "$G" claim --lane plan; expect_rc 0
    run "$G" job "$OUT" --json; expect_eq "$(jqo .status)" success "plan lane"
done
W1=$(sql "SELECT id FROM work_items WHERE key='wi-1'")
W2=$(sql "SELECT id FROM work_items WHERE key='wi-2'")

# work: claim the work lane, run it; sets RUN, leaves the outcome in $OUT
work() {
    run "$G" claim --lane work --json; expect_rc 0 "claim work"
    RUN=$(jqo .run_id)
    run "$G" job "$RUN" --json; expect_rc 0 "job"
}
item() { sql "SELECT $1 FROM work_items WHERE id='$W1'"; }
# execute prompts (the user message) sent to a fake, one a line
prompts() { jq -c 'select(.headers["x-goald-stage"] == "execute") | .body.messages[1].content' "$1"; }

# --- tier 1: retry x max_retries (2) on model 0 -----------------------------------
work; expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/gate/retry "attempt 1"
expect_eq "$(item "tier||' '||model_index||' '||status")" "1 0 ready"
work; expect_eq "$(jqo .next)" retry "attempt 2"
case "$(prompts "$LOG_A" | sed -n 2p)" in *"expected 6, got alpha"*) ok ;; *) fail "retry 1 lacks the gate output" ;; esac
# --- tier 2: the next model ------------------------------------------------------------
work; expect_eq "$(jqo .next)" failover "attempt 3: tier 1 exhausted"
expect_eq "$(item "tier||' '||model_index")" "2 1"
expect_eq "$(sql "SELECT json_extract(payload,'\$.why') FROM events WHERE run_id='$RUN' AND type='recovery.failover'")" "tier 2: next model of the chain"
# --- tier 3: Plan B, asked of the model in use; its strategy stored --------------------
work; expect_eq "$(jqo .next)" plan_b "attempt 4 (model 1) failed"
expect_eq "$(sql "SELECT model||' '||tier FROM runs WHERE id='$RUN'")" "mb 2"
expect_eq "$(item "tier||' '||model_index")" "3 1"
expect_eq "$(item strategy)" "STRATEGY-XYZ: compute with expr"
pb=$(jq -c 'select(.headers["x-goald-stage"] == "plan_b") | .body.messages[1].content' "$LOG_B")
case "$pb" in *"expected 6, got delta"*) ok ;; *) fail "Plan B was not told what failed: $pb" ;; esac
expect_eq "$(sql "SELECT json_extract(payload,'\$.strategy') FROM events WHERE run_id='$RUN' AND type='recovery.plan_b'")" "STRATEGY-XYZ: compute with expr"
case "$(prompts "$LOG_B" | sed -n 1p)" in *STRATEGY-XYZ*) fail "the strategy came before Plan B" ;; *) ok ;; esac
# --- tier 4: the Plan B attempt fails: escalation --------------------------------------
work; expect_eq "$(jqo .next)" escalated "attempt 5 (Plan B) failed"
case "$(prompts "$LOG_B" | sed -n 2p)" in *"Strategy to follow (earlier ones failed): STRATEGY-XYZ"*) ok ;;
    *) fail "the Plan B strategy is not in the next prompt" ;; esac
expect_eq "$(sql "SELECT group_concat(tier||':'||model_index||':'||ifnull(model,''), ' ') FROM (SELECT * FROM runs WHERE item_id='$W1' ORDER BY created_at, rowid) AS q1")" \
    "1:0:ma 1:0:ma 1:0:ma 2:1:mb 3:1:mb" "tiers and models of the attempts in order"
expect_eq "$(item status)" escalated
expect_eq "$(sql "SELECT status FROM goals")" blocked "a critical item escalated blocks its goal"
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status='open'")" 1

# the packet: every field filled
run "$G" escalations --json
expect_rc 0; json_ok
ESC=$(jqo '.[0].id')
P=$(sql "SELECT packet FROM escalations WHERE id='$ESC'")
pk() { echo "$P" | jq -r "$1"; }
expect_eq "$(pk '.work_item | [.id, .key, .title, .critical, .strategy] | @tsv')" "$(printf '%s\twi-1\tAdd mul.sh\ttrue\tSTRATEGY-XYZ: compute with expr' "$W1")"
expect_eq "$(pk .reason)" recovery_exhausted
expect_eq "$(pk '.attempts | length')" 5
expect_eq "$(pk '[.attempts[] | .tried] | join(",")')" "tried alpha,tried bravo,tried charlie,tried delta,tried echo with expr"
expect_eq "$(pk '[.attempts[] | .strategy] | join(",")')" "as planned,as planned,as planned,as planned,STRATEGY-XYZ: compute with expr" "each attempt's strategy"
expect_eq "$(pk '[.attempts[] | select((.why_failed | test("got [a-z]+")) and (.signature | test("^[0-9a-f]{64}$")) and .status == "failed" and .error_class == "gate")] | length')" 5 "attempts: why_failed, signature"
expect_eq "$(pk '[.attempts[].signature] | unique | length')" 5 "five different signatures"
expect_eq "$(pk '.state.gates_failing | map(.name + ":" + (.exit_code|tostring) + ":" + .classification) | join(",")')" "tests:1:introduced"
expect_eq "$(pk '.state.gates_passing | length')" 0
expect_eq "$(pk '.state.budget_remaining | (.tokens == 10000000 - 550 and .cost_usd < 100 and .cost_usd > 99.99)')" true "budget remaining: $(pk .state.budget_remaining)"
expect_eq "$(pk '.state.artifacts | map(.type) | unique | join(",")')" patch "the failed attempts' patches"
expect_eq "$(pk .analysis.root_cause)" "ROOT-CAUSE: mul.sh never multiplies"
expect_eq "$(pk '.analysis.options | length')" 3
expect_eq "$(pk '[.analysis.options[] | select(.option != "" and .pros != "" and .cons != "")] | length')" 3
expect_eq "$(pk .analysis.minimal_question)" "MINIMAL: which tool should mul.sh use?"
expect_eq "$(pk .minimal_question)" "MINIMAL: which tool should mul.sh use?"
expect_eq "$(pk '.actions | join(",")')" "retry,alternative,skip,increase_budget,complete_partial,pause"
expect_eq "$(pk .urgency)" normal
case "$(jq -c 'select(.headers["x-goald-stage"] == "escalate") | .body.messages[1].content' "$LOG_B")" in
    *"tried echo with expr"*) ok ;; *) fail "the escalate stage was not given the attempts" ;; esac
# idempotent: one open escalation per item and reason (the index refuses a second)
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE item_id='$W1' AND type='recovery_exhausted'")" 1

# --- resolve retry: the input in the next prompt; recovery starts over -------------
run "$G" resolve "$ESC" --action retry --input "HINT-RETRY: use expr"
expect_rc 0 "resolve retry"
expect_eq "$(item "status||' '||tier||' '||human_input")" "ready 1 HINT-RETRY: use expr"
expect_eq "$(sql "SELECT status FROM goals")" active "nothing blocks the goal any more"
expect_eq "$(sql "SELECT status||' '||resolution||' '||resolution_input FROM escalations WHERE id='$ESC'")" "resolved retry HINT-RETRY: use expr"
# the next run (model 1) is refused the key: auth goes straight to tier 4
work
expect_eq "$(jqo .status)/$(jqo .error_class)/$(jqo .next)" failed/auth/escalated "auth"
case "$(prompts "$LOG_B" | sed -n 3p)" in *"A human answered: HINT-RETRY: use expr"*) ok ;;
    *) fail "the human's input is not in the next prompt" ;; esac
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='retry.scheduled'")" 0
expect_eq "$(sql "SELECT json_extract(payload,'\$.tier')||' '||json_extract(payload,'\$.from_tier') FROM events WHERE run_id='$RUN' AND type='recovery.needs_human'")" "4 1"
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
expect_eq "$(sql "SELECT type FROM escalations WHERE id='$ESC'")" auth
P=$(sql "SELECT packet FROM escalations WHERE id='$ESC'")
expect_eq "$(pk '.actions | join(",")')" "retry,alternative,skip,complete_partial,pause"
expect_eq "$(pk '.analysis | [.source, (.options | length), (.minimal_question | length > 0), (.root_cause | test("API key"))] | @tsv')" "$(printf 'goald\t5\ttrue\ttrue')" "deterministic analysis when the model is down"
expect_eq "$(jq -s '[.[] | select(.headers["x-goald-stage"] == "escalate")] | length' "$LOG_B")" 1 "no model asked about an auth failure"
run "$G" resolve "$ESC" --action increase_budget --input max_tokens=1
expect_rc 2 "auth escalations do not take increase_budget"
expect_err "accepts retry, alternative, skip, complete_partial, pause, not increase_budget"

# --- resolve alternative: the input becomes the strategy -------------------------------
run "$G" resolve "$ESC" --action alternative
expect_rc 2 "alternative needs --input"
run "$G" resolve "$ESC" --action alternative --input "ALT-PLAN: use bc"
expect_rc 0 "resolve alternative"
expect_eq "$(item "status||' '||strategy")" "ready ALT-PLAN: use bc"
work
expect_eq "$(jqo .error_class)" auth
case "$(prompts "$LOG_B" | sed -n 4p)" in *"Strategy to follow (earlier ones failed): ALT-PLAN: use bc"*) ok ;;
    *) fail "the alternative is not in the next prompt" ;; esac
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
P=$(sql "SELECT packet FROM escalations WHERE id='$ESC'")
expect_eq "$(pk '[.attempts[-3:][] | .strategy] | join(",")')" "STRATEGY-XYZ: compute with expr,STRATEGY-XYZ: compute with expr,ALT-PLAN: use bc" "strategies after the human's alternative"

# --- resolve skip: the item is skipped, its dependent goes on ---------------------------
expect_eq "$(sql "SELECT status FROM work_items WHERE id='$W2'")" queued
run "$G" resolve "$ESC" --action skip
expect_rc 0 "resolve skip"
expect_eq "$(item status)" skipped
expect_eq "$(sql "SELECT status FROM work_items WHERE id='$W2'")" ready "the dependent of a skipped item"
expect_eq "$(sql "SELECT status FROM goals")" active
run "$G" resolve "$ESC" --action retry
expect_rc 1 "a resolved escalation stays resolved"
expect_err "already resolved"

# ===== budget escalations: pause, increase_budget, complete_partial ====================
db_use budget
unset GOALD_LLM_MODELS
R2="$T/repo2"
make_repo "$R2"
cat >"$T/budget.jsonl" <<'EOF'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["ls", "write"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "one", "type": "code", "effort": "S"}, {"key": "wi-2", "title": "two", "type": "code", "effort": "M", "depends_on": ["wi-1"]}]}}
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}], "usage": {"input": 900, "output": 100}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "one.txt", "content": "1"}}, {"name": "complete", "arguments": {"summary": "wrote one.txt"}}], "usage": {"input": 900, "output": 100}}
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}], "usage": {"input": 900, "output": 100}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "two.txt", "content": "2"}}], "usage": {"input": 900, "output": 100}}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_SCRIPT="$T/budget.jsonl"
printf '{"title":"budget","repo":"%s","base_branch":"main","budget":{"max_tokens":1500}}' "$R2" >"$T/g2.json"
run "$G" submit "$T/g2.json"; expect_rc 0; GID=$OUT
for _ in 1 2; do
    run "$G" claim --lane plan; expect_rc 0
    run "$G" job "$OUT" --json; expect_eq "$(jqo .status)" success
done
# 1000 tokens spent; the next call (~1000) would pass 1500: escalation
work
expect_eq "$(jqo .error_class)/$(jqo .next)" budget/escalated
B1=$(sql "SELECT item_id FROM runs WHERE id='$RUN'")
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
expect_eq "$(sql "SELECT type FROM escalations WHERE id='$ESC'")" budget
expect_eq "$(sql "SELECT status FROM goals")" blocked
run "$G" resolve "$ESC" --action retry
expect_rc 2 "budget escalations take increase_budget, complete_partial, pause"
# pause: nothing moves
run "$G" resolve "$ESC" --action pause
expect_rc 0 "resolve pause"
expect_eq "$(sql "SELECT status||' '||resolution FROM escalations WHERE id='$ESC'")" "open pause"
expect_eq "$(sql "SELECT status FROM goals")" blocked
expect_eq "$(sql "SELECT status FROM work_items WHERE id='$B1'")" escalated
expect_eq "$(sql "SELECT count(*) FROM events WHERE type='escalation.paused'")" 1
run "$G" claim --lane work
expect_rc 1 "nothing to claim while paused"
# increase_budget: the new limit, the item goes again and completes
run "$G" resolve "$ESC" --action increase_budget --input max_tokens=3500
expect_rc 0 "resolve increase_budget"
expect_eq "$(sql "SELECT budget_max_tokens||' '||status FROM goals")" "3500 active"
expect_eq "$(sql "SELECT status FROM work_items WHERE id='$B1'")" ready
work
expect_eq "$(jqo .status)" success "the item finishes on the raised budget"
expect_eq "$(sql "SELECT status FROM work_items WHERE id='$B1'")" done
# the second item runs out again (3000 spent + ~1000 > 3500): complete_partial
work
expect_eq "$(jqo .error_class)/$(jqo .next)" budget/escalated
ESC=$(sql "SELECT id FROM escalations WHERE status='open'")
run "$G" resolve "$ESC" --action complete_partial
expect_rc 0 "resolve complete_partial"
expect_eq "$(sql "SELECT partial||' '||status FROM goals")" "1 active"
expect_eq "$(sql "SELECT group_concat(key||'='||status, ' ') FROM (SELECT * FROM work_items ORDER BY key) AS q2")" "wi-1=done wi-2=cancelled"
run "$G" report "$GID" --json
expect_rc 0
expect_eq "$(jqo .goal.partial)" true "report says partial"
expect_eq "$(jqo '.escalations | length')" 0
run "$G" claim --lane work --json
expect_rc 0; expect_eq "$(jqo .kind)" publish "a partial goal goes to publishing"

# ===== a non-critical item that exhausts recovery is skipped ===========================
db_use skip; export GOALD_CONTROL_MAX_RETRIES=0
R3="$T/repo3"
make_repo "$R3"
cat >"$T/skip.jsonl" <<'EOF'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["ls"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "opt", "title": "nice to have", "type": "code", "effort": "S", "critical": false}, {"key": "next", "title": "after it", "type": "code", "effort": "S", "depends_on": ["opt"]}]}}
{"stage": "execute", "content": "nothing to do", "tool_calls": [{"name": "complete", "arguments": {"summary": "did nothing"}}]}
EOF
export GOALD_LLM_SCRIPT="$T/skip.jsonl"
printf '{"title":"skip","repo":"%s","base_branch":"main"}' "$R3" >"$T/g3.json"
run "$G" submit "$T/g3.json"; expect_rc 0
for _ in 1 2; do
    run "$G" claim --lane plan; expect_rc 0
    run "$G" job "$OUT" --json; expect_eq "$(jqo .status)" success
done
# no diff: no_artifact; no retries, one model, and no Plan B answer: skipped
work
expect_eq "$(jqo .error_class)/$(jqo .next)" no_artifact/skipped
expect_eq "$(sql "SELECT status||' '||tier FROM work_items WHERE key='opt'")" "skipped 4"
expect_eq "$(sql "SELECT status FROM work_items WHERE key='next'")" ready "the dependent proceeds"
expect_eq "$(sql "SELECT json_extract(payload,'\$.action') FROM events WHERE run_id='$RUN' AND type='retry.exhausted'")" skipped
expect_eq "$(sql "SELECT count(*) FROM escalations")" 0 "no human needed"
expect_eq "$(sql "SELECT status FROM goals")" active


# ===== Plan B after a run stopped by max_tokens; ask_human ===========================
# Plan B and the escalate analysis ask on their own account: the limit that
# stopped the run does not refuse them
db_use pb; export GOALD_CONTROL_MAX_RETRIES=0
R4="$T/repo4"
make_repo "$R4"
cat >"$T/pb.jsonl" <<'EOF'
{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["ls"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "one", "type": "code", "effort": "S"}]}}
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}], "usage": {"input": 900, "output": 200}}
{"stage": "plan_b", "content": {"strategy": "SMALLER STEPS", "reason": "the run ran out of tokens"}, "usage": {"input": 100, "output": 10}}
{"stage": "execute", "tool_calls": [{"name": "ask_human", "arguments": {"question": "Which file?"}}], "usage": {"input": 300, "output": 10}}
{"stage": "escalate", "content": {"root_cause": "the item is ambiguous", "options": [{"option": "retry", "description": "name the file", "pros": "quick", "cons": "none", "effort": "none"}], "minimal_question": "Which file should change?"}, "usage": {"input": 50, "output": 5}}
EOF
export GOALD_LLM_SCRIPT="$T/pb.jsonl"
printf '{"title":"pb","repo":"%s","base_branch":"main"}' "$R4" >"$T/g4.json"
run "$G" submit "$T/g4.json"; expect_rc 0
for _ in 1 2; do
    run "$G" claim --lane plan; expect_rc 0
    run "$G" job "$OUT" --json; expect_eq "$(jqo .status)" success
done
GOALD_CONTROL_MAX_TOKENS=1000 work
expect_eq "$(jqo .error_class)/$(jqo .next)" limit/plan_b "Plan B after max_tokens"
expect_eq "$(sql "SELECT status||' '||tier||' '||strategy FROM work_items")" "ready 3 SMALLER STEPS"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type='control.limit_reached'")" 1 "the limit fired once, for the run only"
work
expect_eq "$(jqo .status)" success "ask_human ends the run"
expect_eq "$(sql "SELECT status||' '||question FROM work_items")" "blocked Which file?"
expect_eq "$(sql "SELECT type||' '||json_extract(packet,'\$.analysis.source')||' '||json_extract(packet,'\$.minimal_question') FROM escalations")" "ask_human model Which file?" "the agent's question verbatim"
expect_eq "$(sql "SELECT turns FROM runs WHERE id='$RUN'")" 2 "the execute call and the analysis"
expect_eq "$(sql "SELECT status FROM goals")" blocked "a critical item waiting on a human blocks its goal"
ESC=$(sql "SELECT id FROM escalations")
run "$G" resolve "$ESC" --action skip
expect_rc 2 "a question is answered, not skipped"
run "$G" resolve "$ESC" --action retry --input "README"
expect_rc 0
expect_eq "$(sql "SELECT status||' '||human_input||' '||ifnull(question,'-') FROM work_items")" "ready README -"
expect_eq "$(sql "SELECT status FROM goals")" active

done_tests
