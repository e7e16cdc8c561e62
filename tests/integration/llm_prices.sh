#!/usr/bin/env bash
# Prices that exist: a current model (gpt-5, claude-haiku-4-5 and its dated
# snapshot) is charged its list price, not $0 nor an older model's; and a
# goal with a USD budget (budget.max_cost_usd) is never run on a model
# without a known price, which would count as $0 against the cap: refused
# at submit when the chain can be read there, else when the stage starts,
# with an error naming the llm.price_* settings; no request is sent.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

elab='{"content": {"components": [], "implicit_requirements": [], "success_criteria": ["x"], "allowed_actions": ["read"], "verification": []}, "usage": {"input": 1000000, "cached_input": 200000, "output": 100000}}'

# --- 1. gpt-5 is charged gpt-5's price -------------------------------------
echo "$elab" >"$T/s1.jsonl"
start_fake_llm p1 openai "$T/s1.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=gpt-5
echo '{"title": "priced", "budget": {"max_cost_usd": 50}}' >"$T/g.json"
submit_goal "$T/g.json"
r=$("$G" claim --lane plan) || fail "no elaborate run"
"$G" job "$r" >/dev/null 2>"$T/job1.err"
# 800k input at 1.25 + 200k cached at 0.125 + 100k output at 10 = 1 + 0.025 + 1
expect_eq "$(sql "SELECT printf('%.4f', cost_usd) FROM runs WHERE id='$r'")" 2.0250 "gpt-5's cost (\$1.25/\$0.125/\$10 per M)"
expect_eq "$(sql "SELECT printf('%.4f', spent_cost_usd) FROM goals WHERE id='$GOAL_ID'")" 2.0250 "the goal's spend"

# --- 2. an Anthropic dated snapshot is priced as its family -----------------
echo "$elab" >"$T/s2.jsonl"
start_fake_llm p2 anthropic "$T/s2.jsonl"
run env GOALD_LLM_PROVIDER=anthropic GOALD_LLM_BASE_URL="${FAKE_URL%/v1}" ANTHROPIC_API_KEY=sk-ant-test-0123456789 \
    GOALD_LLM_MODEL=claude-haiku-4-5-20251001 "$G" llm chat --stage elaborate --json <<<'[{"role": "user", "content": "hi"}]'
expect_rc 0 "llm chat on claude-haiku-4-5-20251001"
# (the fake's input_tokens exclude the 200k cache reads): 1M at 1 + 200k
# at 0.10 + 100k at 5 = 1 + 0.02 + 0.5
expect_eq "$(jqo '.cost_usd * 10000 | round')" 15200 "claude-haiku-4-5's cost (\$1/\$0.10/\$5 per M)"

# --- 3. a model without a price and a USD cap: refused at submit --------------
export GOALD_LLM_MODEL=qwen2.5-coder:7b
run "$G" submit "$T/g.json"
[ "$RC" != 0 ] || fail "a USD budget on a model without a price was accepted"
ok
expect_err "budget.max_cost_usd: model qwen2.5-coder:7b has no known price"
expect_err "llm.price_in and llm.price_out"
# without a cap the goal is fine; with prices configured too
echo '{"title": "no cap"}' >"$T/nocap.json"
run "$G" submit "$T/nocap.json"
expect_rc 0 "a goal without a USD budget on an unpriced model"
run env GOALD_LLM_PRICE_IN=0 GOALD_LLM_PRICE_OUT=0 "$G" submit "$T/g.json"
expect_rc 0 "the same goal once llm.price_in/out say the model is free"
# a chain: the entry without a price is named
cat >"$T/chain.json" <<JSON
{"llm": {"models": [{"provider": "openai", "model": "gpt-5-mini", "base_url": "$FAKE_URL"},
                    {"provider": "openai", "model": "my-local", "base_url": "$FAKE_URL"}]}}
JSON
run env -u GOALD_LLM_MODEL -u GOALD_LLM_BASE_URL GOALD_CONFIG="$T/chain.json" "$G" submit "$T/g.json"
[ "$RC" != 0 ] || fail "a chain with an unpriced fallback was accepted under a USD budget"
ok
expect_err "model my-local (llm.models[1]) has no known price"
expect_err "llm.models[1].price_in"

# --- 4. submitted where no chain could be read: refused when the stage starts --
db_use late
: >"$T/s4.jsonl"
start_fake_llm p4 openai "$T/s4.jsonl"
run env -u GOALD_LLM_MODEL -u GOALD_LLM_BASE_URL "$G" submit "$T/g.json"
expect_rc 0 "submit where no model is configured (the check waits for the stage)"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=gpt-5-pro
r=$("$G" claim --lane plan) || fail "no elaborate run (late)"
run "$G" job "$r" --json
expect_eq "$(sql "SELECT error_class FROM runs WHERE id='$r'")" config "the run's class"
case "$(sql "SELECT failure_reason FROM runs WHERE id='$r'")" in
    *'model gpt-5-pro has no known price'*'llm.price_in'*) ok ;;
    *) fail "the run's reason: $(sql "SELECT failure_reason FROM runs WHERE id='$r'")" ;;
esac
expect_eq "$(fake_requests)" 0 "requests sent for an unpriced model under a USD cap"
expect_eq "$(sql "SELECT count(*) FROM breakers WHERE error_class='config' AND state='open'")" 0 "no config breaker (other goals go on)"
done_tests
