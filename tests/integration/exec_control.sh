#!/usr/bin/env bash
# The control plane through real execute runs (script provider,
# temporary git repositories): each run limit (max_turns, max_wall_time,
# max_tokens) fires with control.limit_reached and its payload; backoff
# delays are computed and honoured by the claim; a model repeating the
# same call is stopped as stalled; a goal with max_cost_usd stops before
# the call that would exceed it.
. "$(dirname "$0")/lib.sh"

HEAD_LINES='{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["it works"], "allowed_actions": ["ls", "read", "edit", "write", "bash"], "verification": [{"name": "t", "type": "test", "command": "true", "must_pass": true}]}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "work", "type": "code", "effort": "S", "critical": true}]}}'

# new_goal NAME BUDGET_JSON: a fresh database and repository, a goal with
# the script $T/NAME.jsonl (the header above + the execute lines on stdin),
# elaborated and planned; sets GID and ITEM.
new_goal() {
    local name=$1 budget=$2 r
    db_use "$name"
    r="$T/$name-repo"
    make_repo "$r"
    { echo "$HEAD_LINES"; cat; } >"$T/$name.jsonl"
    export GOALD_LLM_MODELS="[{\"provider\":\"script\",\"model\":\"m\",\"script\":\"$T/$name.jsonl\",\"price_in\":1.0,\"price_out\":1.0}]"
    printf '{"title":"%s","repo":"%s","base_branch":"main"%s}' "$name" "$r" "$budget" >"$T/$name.json"
    run "$G" submit "$T/$name.json"; expect_rc 0 "submit $name"; GID=$OUT
    for _ in 1 2; do
        run "$G" claim --lane plan; expect_rc 0 "claim plan lane ($name)"
        run "$G" job "$OUT" --json; expect_rc 0; expect_eq "$(jqo .status)" success "$name: plan lane run"
    done
    ITEM=$(sql "SELECT id FROM work_items")
}

# work: claim the work lane and run the unit; sets RUN, leaves the job's $OUT
work() {
    run "$G" claim --lane work --json; expect_rc 0 "claim work"
    RUN=$(jqo .run_id)
    run "$G" job "$RUN" --json; expect_rc 0 "job"
}

# limit_payload RUN: the control.limit_reached payload of the run
limit_payload() { sql "SELECT payload FROM events WHERE run_id='$1' AND type='control.limit_reached'"; }
exec_requests() { sql "SELECT count(*) FROM events WHERE run_id='$1' AND type='llm.request' AND json_extract(payload,'\$.stage')='execute'"; }

export GOALD_CONTROL_BACKOFF_BASE_MS=1

# --- max_turns ------------------------------------------------------------------
new_goal turns "" <<'EOF'
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}]}
{"stage": "execute", "tool_calls": [{"name": "read", "arguments": {"path": "README"}}]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "never reached"}}]}
EOF
GOALD_CONTROL_MAX_TURNS=2 work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/limit "max_turns run"
p=$(limit_payload "$RUN")
expect_eq "$(echo "$p" | jq -r '.limit_type')" max_turns
expect_eq "$(echo "$p" | jq -r '.value')" 2
expect_eq "$(echo "$p" | jq -r '.threshold')" 2
expect_eq "$(echo "$p" | jq -r '.task_id')" "$ITEM"
expect_eq "$(exec_requests "$RUN")" 2 "no third model call"
expect_eq "$(sql "SELECT error_class FROM runs WHERE id='$RUN'")" limit
case "$(sql "SELECT failure_reason FROM runs WHERE id='$RUN'")" in
    *"run limit max_turns reached (2 of 2)"*) ok ;; *) fail "failure_reason names the limit" ;; esac

# --- max_wall_time ----------------------------------------------------------------
new_goal wall "" <<'EOF'
{"stage": "execute", "sleep_ms": 1200, "tool_calls": [{"name": "ls", "arguments": {}}]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "never reached"}}]}
EOF
GOALD_CONTROL_MAX_WALL_TIME_S=1 work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/limit "max_wall_time run"
p=$(limit_payload "$RUN")
expect_eq "$(echo "$p" | jq -r '.limit_type')" max_wall_time
expect_eq "$(echo "$p" | jq -r '.threshold')" 1
expect_eq "$(echo "$p" | jq -r '.value >= 1.2 and .value < 10')" true "wall time value in seconds: $p"
expect_eq "$(exec_requests "$RUN")" 1

# --- max_tokens -------------------------------------------------------------------
new_goal tokens "" <<'EOF'
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}], "usage": {"input": 5000, "output": 1000}}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "never reached"}}]}
EOF
GOALD_CONTROL_MAX_TOKENS=5000 work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/limit "max_tokens run"
p=$(limit_payload "$RUN")
expect_eq "$(echo "$p" | jq -c '[.limit_type, .value, .threshold]')" '["max_tokens",6000,5000]'
expect_eq "$(exec_requests "$RUN")" 1

# --- backoff: computed, stored as next_attempt_at, honoured by the claim -----------
new_goal backoff "" <<'EOF'
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}]}
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}]}
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}], "usage": {"input": 1000, "output": 0}}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "never reached"}}]}
EOF
# delays of seconds: the claim right after a failure must fall inside
# them even on a machine loaded by a whole suite
export GOALD_CONTROL_MAX_TURNS=1 GOALD_CONTROL_BACKOFF_BASE_MS=2000 GOALD_CONTROL_BACKOFF_MAX_MS=5000
delays=""
for n in 1 2 3; do
    # the third failure differs (max_tokens): three identical signatures in
    # a row would end tier 1 early
    if [ $n = 3 ]; then GOALD_CONTROL_MAX_TURNS=5 GOALD_CONTROL_MAX_TOKENS=100 work; else work; fi
    expect_eq "$(jqo .next)" retry "failure $n is retried"
    b=$(sql "SELECT json_extract(payload,'\$.backoff_ms') FROM events WHERE run_id='$RUN' AND type='retry.scheduled'")
    delays="$delays $b"
    # next_attempt_at = the time of the decision + the delay
    expect_eq "$(sql "SELECT next_attempt_at - e.ts BETWEEN $b - 250 AND $b FROM work_items, events e WHERE e.run_id='$RUN' AND e.type='retry.scheduled'")" 1 "next_attempt_at after failure $n"
    expect_eq "$(sql "SELECT status FROM work_items")" ready
    # not claimable before next_attempt_at ...
    run "$G" claim --lane work
    expect_rc 1 "claim during the backoff after failure $n"
    expect_eq "$(sql "SELECT count(*) FROM runs WHERE status='running'")" 0
    # ... and claimable after it
    while [ "$(sql "SELECT next_attempt_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM work_items")" = 1 ]; do sleep 0.1; done
done
expect_eq "$delays" " 2000 4000 5000" "min(base*2^(n-1), max)"
run "$G" claim --lane work --json
expect_rc 0 "claim after the backoff"
expect_eq "$(jqo .attempt)" 4
unset GOALD_CONTROL_MAX_TURNS GOALD_CONTROL_BACKOFF_MAX_MS
export GOALD_CONTROL_BACKOFF_BASE_MS=1

# --- a model repeating the same call is stalled -----------------------------------
new_goal stall "" <<'EOF'
{"stage": "execute", "content": "checking", "tool_calls": [{"name": "read", "arguments": {"path": "README"}}]}
{"stage": "execute", "content": "checking", "tool_calls": [{"name": "read", "arguments": {"path": "README"}}]}
{"stage": "execute", "content": "checking", "tool_calls": [{"name": "read", "arguments": {"path": "README"}}]}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "never reached"}}]}
EOF
work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/stalled "stalled run"
expect_eq "$(sql "SELECT error_class FROM runs WHERE id='$RUN'")" stalled
expect_eq "$(exec_requests "$RUN")" 3 "stopped after the third identical turn"
p=$(sql "SELECT payload FROM events WHERE run_id='$RUN' AND type='progress.stalled'")
expect_eq "$(echo "$p" | jq -r '[.task_id == "'"$ITEM"'", .repeats, .threshold, (.fingerprint | length)] | @tsv')" "$(printf 'true\t3\t3\t64')"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='control.limit_reached'")" 0

# --- max_cost_usd: stop before the call that would exceed it ----------------------
# each execute call costs 4000 tokens x $1/M = $0.004; the limit is $0.010:
# after two calls ($0.008) a third (~$0.004 more) would exceed it
new_goal cost ', "budget": {"max_cost_usd": 0.01}' <<'EOF'
{"stage": "execute", "tool_calls": [{"name": "ls", "arguments": {}}], "usage": {"input": 3000, "output": 1000}}
{"stage": "execute", "tool_calls": [{"name": "read", "arguments": {"path": "README"}}], "usage": {"input": 3000, "output": 1000}}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "never reached"}}], "usage": {"input": 3000, "output": 1000}}
EOF
work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/budget "budget run"
expect_eq "$(exec_requests "$RUN")" 2
p=$(limit_payload "$RUN")
expect_eq "$(echo "$p" | jq -c '[.limit_type, .value, .estimate, .threshold]')" '["budget.cost_usd",0.008,0.004,0.01]'
lim=$(sql "SELECT id FROM events WHERE run_id='$RUN' AND type='control.limit_reached'")
expect_eq "$(sql "SELECT count(*) FROM events WHERE type='llm.request' AND id > $lim")" 0 "no model call after the limit"
expect_eq "$(sql "SELECT spent_cost_usd <= budget_max_cost_usd FROM goals")" 1 "spent within the limit"
expect_eq "$(sql "SELECT printf('%.4f', spent_cost_usd) FROM goals")" 0.0080
# the budget is a human's call: an escalation offering the budget actions
expect_eq "$(jqo .next)" escalated
expect_eq "$(sql "SELECT type||' '||status FROM escalations")" "budget open"
expect_eq "$(sql "SELECT json_extract(packet,'\$.actions') FROM escalations")" '["increase_budget","complete_partial","pause"]'
expect_eq "$(sql "SELECT status FROM goals")" blocked
run "$G" claim --lane work
expect_rc 1 "nothing to claim while the budget blocks"


# --- max_cost_usd across runs: a run's first call is estimated too ---------------
# the first item's run spends $0.004 (execute) + $0.004 (review) = $0.008;
# the second item's first call (~$0.004, like the goal's last call) would
# pass $0.010: refused before it is sent
HEAD_LINES='{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["write"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "one", "type": "code", "effort": "S"}, {"key": "wi-2", "title": "two", "type": "code", "effort": "S", "depends_on": ["wi-1"]}]}}'
new_goal cost2 ', "budget": {"max_cost_usd": 0.01}' <<'EOF'
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "one.txt", "content": "1"}}, {"name": "complete", "arguments": {"summary": "one"}}], "usage": {"input": 3000, "output": 1000}}
{"stage": "review", "content": {"verdict": "pass", "findings": []}, "usage": {"input": 3000, "output": 1000}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "two.txt", "content": "2"}}, {"name": "complete", "arguments": {"summary": "two"}}], "usage": {"input": 3000, "output": 1000}}
{"stage": "review", "content": {"verdict": "pass", "findings": []}, "usage": {"input": 3000, "output": 1000}}
EOF
work
expect_eq "$(jqo .status)" success "the first item fits the budget"
expect_eq "$(sql "SELECT printf('%.4f', spent_cost_usd) FROM goals")" 0.0080
work
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/budget "the second item's first call"
expect_eq "$(exec_requests "$RUN")" 0 "no call sent by the second run"
expect_eq "$(limit_payload "$RUN" | jq -c '[.limit_type, .value, .estimate, .threshold]')" '["budget.cost_usd",0.008,0.004,0.01]'
expect_eq "$(sql "SELECT spent_cost_usd <= budget_max_cost_usd FROM goals")" 1 "never over the limit"

done_tests
