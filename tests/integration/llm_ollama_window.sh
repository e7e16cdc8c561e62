#!/usr/bin/env bash
# Ollama's real window: behind its OpenAI-compatible /v1 endpoint a server
# runs a model with its own context window (here 8192 tokens, its num_ctx)
# and cuts a longer prompt silently, whatever the model's published window
# (qwen2.5-coder: 32768).  goald asks the server (POST /api/show: num_ctx in
# the parameters; else GET /api/ps: the loaded model's context_length) and
# compacts at 75 % of the window the server applies: no request passes it
# (the fake notes every request it would have cut), and each compaction
# event names that window.  A configured window wins over the probe.
. "$(dirname "$0")/lib.sh"

R="$T/repo"
make_repo "$R"
mkdir -p "$R/data"
for i in $(seq -w 1 29); do
    # 2 KiB: 32 lines of 64 bytes, different in each file
    awk -v f="$i" 'BEGIN { for (l = 1; l <= 32; l++) printf "file %s line %04d %s\n", f, l, substr("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz", 1, 45) }' >"$R/data/f$i.txt"
done
git -C "$R" add data
git -C "$R" commit -q -m "data files"

script() {
    echo '{"content": {"components": ["data"], "implicit_requirements": [], "success_criteria": ["read everything"], "allowed_actions": ["read", "write", "bash"], "verification": [{"name": "ok", "type": "test", "command": "true", "must_pass": true}]}, "usage": {"input": 500, "output": 100}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "read all the data", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}, "usage": {"input": 500, "output": 100}}'
    for i in $(seq -w 1 29); do
        printf '{"tool_calls": [{"name": "read", "arguments": {"path": "data/f%s.txt"}}], "usage": {"input": 1000, "output": 50}}\n' "$i"
    done
    echo '{"tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "read all\n"}}], "usage": {"input": 1000, "output": 50}}'
    echo '{"tool_calls": [{"name": "complete", "arguments": {"summary": "read all 29 files"}}], "usage": {"input": 1000, "output": 50}}'
    echo '{"content": {"verdict": "pass", "findings": []}, "usage": {"input": 500, "output": 100}}'
}

# drive NAME: one goal through elaborate, plan, execute; RUN: the execute run
drive() {
    local r j
    echo "{\"title\": \"window $1\", \"repo\": \"$R\", \"base_branch\": \"main\"}" >"$T/goal-$1.json"
    "$G" submit "$T/goal-$1.json" >/dev/null || fail "submit $1"
    for lane in plan plan; do
        r=$("$G" claim --lane $lane) && "$G" job "$r" >>"$T/jobs.out" 2>>"$T/jobs.err"
    done
    for _ in 1 2 3 4 5; do
        j=$("$G" claim --lane work --json) || fail "no execute run for $1"
        r=$(jq -r .run_id <<<"$j")
        [ "$(jq -r .kind <<<"$j")" = execute ] && break
        "$G" job "$r" >>"$T/jobs.out" 2>>"$T/jobs.err"
    done
    run "$G" job "$r" --json
    RUN=$r
}
compactions() { sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='context.compacted' AND json_extract(payload,'$.window') = $1"; }

export GOALD_CONTROL_MAX_TURNS=100 GOALD_CONTROL_MAX_WALL_TIME_S=600
export GOALD_LLM_MODEL=qwen2.5-coder:7b

for report in show ps; do
    db_use "$report"
    script >"$T/s-$report.jsonl"
    : >"$T/cut-$report.jsonl"
    FAKE_LLM_ARGS="--ollama-num-ctx 8192 --ollama-report $report --truncated-log $T/cut-$report.jsonl" \
        start_fake_llm "o-$report" openai "$T/s-$report.jsonl"
    export GOALD_LLM_BASE_URL="$FAKE_URL"
    drive "$report"
    expect_rc 0 "the execute job ($report)"
    expect_eq "$(jqo .status)" success "the item completes ($report)"
    expect_eq "$(grep -c . "$T/cut-$report.jsonl" || true)" 0 \
        "requests the server cut silently ($report; $(head -c 300 "$T/cut-$report.jsonl"))"
    n=$(compactions 8192)
    [ "$n" -ge 1 ] || fail "no compaction at the server's window ($report): $(sql "SELECT payload FROM events WHERE type='context.compacted' LIMIT 2")"
    ok
    expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='context.compacted' AND json_extract(payload,'$.window') != 8192")" 0 \
        "compactions at another window ($report)"
    # the output budget follows the window too: a quarter of 8192
    expect_eq "$(jq -s '[.[] | select(.headers["x-goald-stage"] == "execute") | .body.max_tokens] | unique | join(",")' "$FAKE_LOG")" '"2048"' \
        "max_tokens asked of an 8k server ($report)"
done

# a configured window is the operator's word: no probe replaces it
db_use configured
script >"$T/s-cfg.jsonl"
: >"$T/cut-cfg.jsonl"
FAKE_LLM_ARGS="--ollama-num-ctx 8192 --truncated-log $T/cut-cfg.jsonl" start_fake_llm o-cfg openai "$T/s-cfg.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_CONTEXT_WINDOW=6000
drive cfg
expect_eq "$(jqo .status)" success "the item completes (configured)"
n=$(compactions 6000)
[ "$n" -ge 1 ] || fail "no compaction at the configured window"
ok
done_tests
