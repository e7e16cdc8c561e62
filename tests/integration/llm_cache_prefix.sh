#!/usr/bin/env bash
# Prompt caching: the execute requests of one run share their prefix.  A
# goal of one item whose execute run takes nine turns (reads of real
# source, grep, a failing and a passing bash command, a 12 KiB write, an
# edit, run_gates, complete), against tests/fakes/fake_llm answering
# "usage": "auto" (cached = the bytes a prompt shares as a prefix with the
# run's previous prompt, as a provider's prompt cache counts it), in the
# OpenAI and the Anthropic protocol.  No compaction happens (a 128k
# window), so every execute request must start with the previous one byte
# for byte: the same tools, the same system prompt, the previous messages
# unchanged; the fake's cached count is the whole previous prompt; goald's
# ledger records the cached tokens the provider reported.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_LLM_RETRY_BACKOFF_MS=1 GOALD_LLM_CONTEXT_WINDOW=128000
export ANTHROPIC_API_KEY=sk-ant-test-0123456789abcdef

big=$(for i in $(seq 1 190); do printf 'line %03d: "quoted", a tab\there, a backslash \\ and caf\xc3\xa9\n' "$i"; done)
call() { jq -cn --arg n "$1" --argjson a "$2" '{tool_calls: [{name: $n, arguments: $a}], usage: "auto"}'; }
{
    echo '{"content": {"components": ["add.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["ls", "read", "grep", "edit", "write", "bash", "run_gates"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]}, "usage": "auto"}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "make add.sh add", "description": "add.sh subtracts", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}, "usage": "auto"}'
    call read '{"path": "add.sh"}' | jq -c '. + {content: "Reading the script."}'
    call read '{"path": "src/strbuf.c"}'
    call grep '{"pattern": "strbuf_add"}'
    call bash '{"command": "sh test.sh"}'
    call write "$(jq -cn --arg c "$big" '{path: "NOTES.md", content: $c}')"
    call edit '{"path": "add.sh", "old_text": "$(($1 - $2))", "new_text": "$(($1 + $2))"}'
    call bash '{"command": "sh test.sh && git status --short"}'
    call run_gates '{}'
    call complete '{"summary": "add.sh adds; NOTES.md written"}'
    echo '{"content": {"verdict": "pass", "findings": []}, "usage": "auto"}'
} >"$T/script.jsonl"

for mode in openai anthropic; do
    db_use "$mode"
    repo="$T/repo-$mode"
    make_project "$repo"
    mkdir -p "$repo/src"
    cp "$GOALD_SOURCE_DIR/util/strbuf.c" "$GOALD_SOURCE_DIR/util/strbuf.h" "$repo/src/"
    git -C "$repo" add -A && git -C "$repo" commit -q -m src
    start_fake_llm "cache-$mode" "$mode" "$T/script.jsonl"
    if [ "$mode" = anthropic ]; then
        export GOALD_LLM_PROVIDER=anthropic GOALD_LLM_MODEL=claude-sonnet-4-20250514
    else
        export GOALD_LLM_PROVIDER=openai GOALD_LLM_MODEL=fake-model
    fi
    export GOALD_LLM_BASE_URL="$FAKE_URL"
    goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' "sh test.sh" >"$T/goal.json"
    submit_goal "$T/goal.json"
    run timeout 120 "$G" daemon --once
    expect_rc 0 "$mode: daemon --once"
    expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "$mode: the goal completes"
    expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'context.compacted'")" 0 "$mode: no compaction"
    jq -c 'select(.headers["x-goald-stage"] == "execute")' "$FAKE_LOG" >"$T/exec-$mode.jsonl"
    expect_eq "$(grep -c . "$T/exec-$mode.jsonl")" 9 "$mode: execute requests"
    expect_eq "$(jq -r '.headers["x-goald-run"]' "$T/exec-$mode.jsonl" | sort -u | grep -c .)" 1 "$mode: one run"
    # each request: the previous one's tools, system and messages, byte for
    # byte (cache_control marks aside: they say where to cache, and move),
    # then new messages only
    broken=$(jq -rs '
        def strip: walk(if type == "object" then del(.cache_control) else . end);
        [.[] | .body | strip] as $r
        | [range(1; $r | length) as $i
           | ($r[$i - 1]) as $p | ($r[$i]) as $c
           | if ($p.tools | tojson) != ($c.tools | tojson) then "request \($i + 1): the tools changed"
             elif ($p.system | tojson) != ($c.system | tojson) then "request \($i + 1): the system prompt changed"
             elif ($c.messages | length) <= ($p.messages | length) then "request \($i + 1): no new message"
             else ([range(0; $p.messages | length) as $k
                    | select(($p.messages[$k] | tojson) != ($c.messages[$k] | tojson))
                    | "request \($i + 1): message \($k) changed: \($p.messages[$k] | tojson | .[0:160]) -> \($c.messages[$k] | tojson | .[0:160])"]
                   | first // empty)
             end] | .[0] // ""' "$T/exec-$mode.jsonl")
    expect_eq "$broken" "" "$mode: each execute request starts with the previous one"
    # the fake's count of the shared prefix (its serialized prompt) is the
    # whole previous prompt, every turn
    short=$(jq -rs '[.[] | .usage] as $u | [range(1; $u | length) as $i
            | select($u[$i].cached_input != $u[$i - 1].input)
            | "request \($i + 1): cached \($u[$i].cached_input) of the previous \($u[$i - 1].input)"] | .[0] // ""' \
        "$T/exec-$mode.jsonl")
    expect_eq "$short" "" "$mode: the cached prefix is the whole previous request"
    # what the provider reported is what goald records
    want=$(jq -s 'map(.usage.cached_input) | add' "$T/exec-$mode.jsonl")
    expect_eq "$(sql "SELECT sum(json_extract(payload, '$.tokens_cached')) FROM events WHERE type = 'llm.response' AND json_extract(payload, '$.stage') = 'execute'")" \
        "$want" "$mode: cached tokens in the ledger"
done
echo "llm_cache_prefix: $TESTS_RUN checks passed"
