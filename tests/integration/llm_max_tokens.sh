#!/usr/bin/env bash
# The default output budget fits the model's context window: an
# 8k-token model (llama3's default window, or llm.context_window) is asked
# for a quarter of it (2048), not llm.max_output_tokens' 8192, which vLLM
# refuses for a small window; a large window keeps 8192; a request of the
# caller's own (llm.max_output_tokens set lower) is kept.
. "$(dirname "$0")/lib.sh"

elab='{"content": {"components": ["x"], "implicit_requirements": [], "success_criteria": ["x"], "allowed_actions": ["read"], "verification": []}, "usage": {"input": 5, "output": 1}}'
for _ in 1 2 3 4; do printf '%s\n' "$elab"; done >"$T/s.jsonl"
start_fake_llm mt openai "$T/s.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
# elaborate one goal with the model's settings; the fake's last request
asked() {
    local id run
    id=$("$G" submit - <<<'{"title": "elaborate me"}') || fail "submit"
    run=$("$G" claim --lane plan) || fail "claim"
    "$G" job "$run" >/dev/null 2>>"$T/jobs.err" || fail "job: $(tail -3 "$T/jobs.err")"
    jq -r '.body.max_tokens // .body.max_completion_tokens' "$FAKE_LOG" | tail -n1
}

expect_eq "$(GOALD_LLM_MODEL=llama3 asked)" 2048 "max_tokens for llama3's 8k window"
expect_eq "$(GOALD_LLM_MODEL=some-local-model GOALD_LLM_CONTEXT_WINDOW=4096 asked)" 1024 \
    "max_tokens for a 4k window (llm.context_window)"
expect_eq "$(GOALD_LLM_MODEL=gpt-4o asked)" 8192 "max_tokens for gpt-4o's 128k window"
expect_eq "$(GOALD_LLM_MODEL=llama3 GOALD_LLM_MAX_OUTPUT_TOKENS=1000 asked)" 1000 \
    "a smaller llm.max_output_tokens is kept"
done_tests
