#!/usr/bin/env bash
# The cost bench: a 40-turn scripted item whose reads return
# 20 KiB each, against tests/fakes/fake_llm with a context window of
# WINDOW tokens (default 128000, gpt-4o's; the fake refuses a bigger
# request), then bench_cost on the fake's request log: input tokens per
# turn, the cacheable-prefix share, total tokens.  And the demo goal's
# total tokens from the ledger.
#   bench/bench_cost.sh BUILD_DIR [WINDOW]   (BUILD_DIR with goald, tests/fake_llm, bench/bench_cost)
set -euo pipefail
B=$(cd "$1" && pwd)
WINDOW=${2:-128000}
export GOALD_BIN="$B/goald" GOALD_BUILD_DIR="$B" GOALD_SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)"
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
R="$T/repo"
make_repo "$R"
mkdir -p "$R/data"
for i in $(seq -w 1 38); do
    awk -v f="$i" 'BEGIN { for (l = 1; l <= 320; l++) printf "file %s line %04d %s\n", f, l, substr("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz", 1, 45) }' >"$R/data/f$i.txt"
done
git -C "$R" add data && git -C "$R" commit -q -m data
{
    echo '{"content": {"components": ["data"], "implicit_requirements": [], "success_criteria": ["read"], "allowed_actions": ["read", "write"], "verification": [{"name": "ok", "type": "test", "command": "true", "must_pass": true}]}, "usage": {"input": 500, "output": 100}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "read the data", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}, "usage": {"input": 500, "output": 100}}'
    for i in $(seq -w 1 38); do
        printf '{"tool_calls": [{"name": "read", "arguments": {"path": "data/f%s.txt"}}], "usage": {"input": 1000, "output": 50}}\n' "$i"
    done
    echo '{"tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "read\n"}}], "usage": {"input": 1000, "output": 50}}'
    echo '{"tool_calls": [{"name": "complete", "arguments": {"summary": "read all"}}], "usage": {"input": 1000, "output": 50}}'
    echo '{"content": {"verdict": "pass", "findings": []}, "usage": {"input": 500, "output": 100}}'
} >"$T/s.jsonl"
FAKE_LLM_CONTEXT_TOKENS=$WINDOW start_fake_llm cost openai "$T/s.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake-model GOALD_LLM_CONTEXT_WINDOW=$WINDOW
export GOALD_CONTROL_MAX_TURNS=100
echo "{\"title\": \"cost\", \"repo\": \"$R\", \"base_branch\": \"main\"}" >"$T/goal.json"
"$G" submit "$T/goal.json" >/dev/null
for lane in plan plan work; do r=$("$G" claim --lane $lane) && "$G" job "$r" >/dev/null; done
echo "window: $WINDOW tokens; compactions: $(sql "SELECT count(*) FROM events WHERE type='context.compacted'")"
"$B/bench/bench_cost" "$FAKE_LOG"
