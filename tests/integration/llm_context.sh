#!/usr/bin/env bash
# Context management: a 60-turn item whose tool outputs are
# 20 KiB each, against a fake model whose context window is 32k tokens
# (tests/fakes/fake_llm --context-tokens: a bigger request is answered
# 400 context_length_exceeded).  Without compaction the history passes
# the window by turn 7 and the run fails; with it the item completes, the
# system prompt and the task stay verbatim at the head of every request,
# and each compaction is an event with the tokens before and after.
# Then the same item with a model that claims a much larger window: the
# provider's context_length answers compact the history and the same turn
# is retried, and the run still completes.
. "$(dirname "$0")/lib.sh"

R="$T/repo"
make_repo "$R"
mkdir -p "$R/data"
for i in $(seq -w 1 59); do
    # 20 KiB: 320 lines of 64 bytes, different in each file
    awk -v f="$i" 'BEGIN { for (l = 1; l <= 320; l++) printf "file %s line %04d %s\n", f, l, substr("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz", 1, 45) }' >"$R/data/f$i.txt"
done
git -C "$R" add data
git -C "$R" commit -q -m "data files"
[ "$(wc -c <"$R/data/f01.txt")" -eq 20480 ] || fail "the data files are not 20 KiB"

script() {
    echo '{"content": {"components": ["data"], "implicit_requirements": [], "success_criteria": ["the gate ok passes"], "allowed_actions": ["read", "write", "bash"], "verification": [{"name": "ok", "type": "test", "command": "true", "must_pass": true}]}, "usage": {"input": 500, "output": 100}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "read all the data", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}, "usage": {"input": 500, "output": 100}}'
    for i in $(seq -w 1 58); do
        printf '{"tool_calls": [{"name": "read", "arguments": {"path": "data/f%s.txt"}}], "usage": {"input": 1000, "output": 50}}\n' "$i"
    done
    echo '{"tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "read all\n"}}], "usage": {"input": 1000, "output": 50}}'
    echo '{"tool_calls": [{"name": "complete", "arguments": {"summary": "read all 59 files"}}], "usage": {"input": 1000, "output": 50}}'
    echo '{"content": {"verdict": "pass", "findings": []}, "usage": {"input": 500, "output": 100}}'
}

# drive one goal through plan, plan, work; prints the execute run id
drive() {
    local r
    echo "{\"title\": \"context $1\", \"repo\": \"$R\", \"base_branch\": \"main\"}" >"$T/goal-$1.json"
    "$G" submit "$T/goal-$1.json" >/dev/null || fail "submit $1"
    for lane in plan plan; do
        r=$("$G" claim --lane $lane) && "$G" job "$r" >>"$T/jobs.out" 2>>"$T/jobs.err"
    done
    # (the work lane may first hand out what is left of an earlier goal)
    for _ in 1 2 3 4 5; do
        j=$("$G" claim --lane work --json) || fail "no execute run for $1"
        r=$(jq -r .run_id <<<"$j")
        [ "$(jq -r .kind <<<"$j")" = execute ] && break
        "$G" job "$r" >>"$T/jobs.out" 2>>"$T/jobs.err"
    done
    run "$G" job "$r" --json
    RUN=$r
}

export GOALD_CONTROL_MAX_TURNS=100 GOALD_CONTROL_MAX_WALL_TIME_S=600

# --- 1. the window known (32k): compaction before it is reached ------------
script >"$T/s1.jsonl"
FAKE_LLM_CONTEXT_TOKENS=32768 start_fake_llm ctx openai "$T/s1.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake-model GOALD_LLM_CONTEXT_WINDOW=32768
drive one
expect_rc 0 "the execute job"
expect_eq "$(jqo .status)" success "the 60-turn item completes (failed: $(jqo .error_class) $(sql "SELECT failure_reason FROM runs WHERE id='$RUN'"))"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='turn.completed'")" 60 "60 turns"
expect_eq "$(grep -c '"n":0,' "$FAKE_LOG" || true)" 0 "no request passed the fake's window"
n=$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='context.compacted'")
[ "$n" -ge 3 ] || fail "expected several compactions, got $n"
# every compaction: before past the threshold, after below it, by stubs
bad=$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='context.compacted' AND NOT (
             json_extract(payload,'$.tokens_before') > json_extract(payload,'$.threshold') AND
             json_extract(payload,'$.tokens_after') < json_extract(payload,'$.threshold') * 2 / 3 AND
             json_extract(payload,'$.window') = 32768 AND json_extract(payload,'$.threshold') = 24576 AND
             json_extract(payload,'$.how') = 'stubs' AND json_extract(payload,'$.reason') = 'threshold' AND
             json_extract(payload,'$.stubbed') >= 1 AND json_extract(payload,'$.turn') >= 1)")
[ "$bad" = 0 ] || { sql "SELECT payload FROM events WHERE type='context.compacted'" >&2; fail "compaction events carry tokens before/after"; }
ok
# the requests: never past the window; the head verbatim; stubs in place
max=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$FAKE_LOG")
[ "$max" -lt 131072 ] || fail "a request of $max bytes (the window is 131072 bytes)"
exec_log() { jq -c 'select(.headers["x-goald-stage"] == "execute")' "$FAKE_LOG"; }
last=$(exec_log | tail -n 1)
first_exec=$(exec_log | head -n 1)
expect_eq "$(exec_log | wc -l)" 60 "60 execute requests"
for k in 0 1; do
    a=$(jq -c ".body.messages[$k]" <<<"$first_exec")
    b=$(jq -c ".body.messages[$k]" <<<"$last")
    [ "$a" = "$b" ] || fail "message $k changed between the first and the last request"
done
jq -e '[.body.messages[] | select(.role == "tool") | .content | select(test("^\\[elided: read data/f01.txt -> 2047[0-9] bytes\\]$"))] | length == 1' <<<"$last" >/dev/null ||
    fail "the first read is not a one-line stub in the last request"
jq -e '.body.messages[-3].role == "tool" and (.body.messages[-3].content | contains("file 58 line 0320"))' <<<"$last" >/dev/null ||
    fail "the last read's output is not verbatim"
# pairing: every tool result answers a call of the request, every call has its result
jq -e '([.body.messages[] | select(.role == "assistant") | .tool_calls[]?.id] | sort) ==
       ([.body.messages[] | select(.role == "tool") | .tool_call_id] | sort)' <<<"$last" >/dev/null ||
    fail "tool calls and results do not pair up"
ok

# --- 2. a model that claims a larger window: context_length, compact, retry --
script >"$T/s2.jsonl"
FAKE_LLM_CONTEXT_TOKENS=32768 start_fake_llm ctx2 openai "$T/s2.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_CONTEXT_WINDOW=1000000
drive two
expect_rc 0 "the execute job (2)"
expect_eq "$(jqo .status)" success "the item completes after context_length answers"
n=$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='context.compacted' AND json_extract(payload,'$.reason')='context_length'")
[ "$n" -ge 1 ] || { sql "SELECT type, payload FROM events WHERE run_id='$RUN' AND type IN ('context.compacted','llm.error')" | head >&2; grep -c . "$FAKE_LOG" >&2; fail "no compaction after a context_length answer"; }
r400=$(grep -c '"n":0,' "$FAKE_LOG" || true)
[ "$r400" -ge 1 ] || fail "the fake never refused a request"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='llm.error' AND json_extract(payload,'$.class')='context_length'")" "$r400" "each refusal is an llm.error"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id='$RUN' AND type='turn.completed'")" 60 "the refused turns were retried, not counted twice"
ok
done_tests
