#!/usr/bin/env bash
# The script provider: lines in order, keyed by stage, faults, sleeps; the
# read position survives across processes (kept in the database); a
# script that does not parse or runs out is an error.  Plus usage and cost
# accounting on runs and goals, and the budget class.  A long script: each
# process serves the right line and, once one has checked the file whole,
# parses only the lines it looks at.
. "$(dirname "$0")/lib.sh"

printf '[{"role":"user","content":"go"}]' >"$T/req.json"
chat() { run "$G" llm chat --json "$@" <"$T/req.json"; }
export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_LLM_RETRY_BACKOFF_MS=10

cat >"$GOALD_LLM_SCRIPT" <<'S'
# a comment, then a blank line

{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"t"}]},"usage":{"input":100,"output":20}}
{"content":"first","usage":{"input":10,"cached_input":4,"output":2}}
{"sleep_ms":300}
{"tool_calls":[{"name":"read","arguments":{"path":"x"}},{"name":"ls","arguments":"{}"}]}
{"error":"rate_limit","status":429,"retry_after_ms":50}
{"content":"after the limit"}
{"stage":"review","error":"context_length","message":"too long"}
S

# each call is a new process: the position is in the database
chat --stage execute
expect_rc 0; expect_eq "$(jqo .message.content)" first
expect_eq "$(jqo .usage.cached_input)" 4
expect_eq "$(jqo .provider)" script
chat --stage plan
expect_rc 0 "keyed line"; expect_eq "$(jqo .message.content | jq -r '.work_items[0].key')" wi-1
t0=$(date +%s%N)
chat --stage execute
t1=$(date +%s%N)
expect_rc 0 "sleep then tool calls"
expect_eq "$(jqo '.message.tool_calls | length')" 2
expect_eq "$(jqo '.message.tool_calls[1].function.name')" ls
[ $(( (t1 - t0) / 1000000 )) -ge 300 ] || fail "sleep_ms not honoured"; ok
chat --stage execute
expect_rc 0 "rate limit retried"; expect_eq "$(jqo .message.content)" "after the limit"
expect_eq "$(sql "SELECT json_extract(payload,'\$.class') FROM events WHERE type='llm.error' ORDER BY id DESC LIMIT 1")" rate_limit
chat --stage review --no-failover
expect_rc 1 "scripted context_length"; expect_eq "$(jqo .error.class)" context_length
chat --stage execute
expect_rc 1 "exhausted"; expect_eq "$(jqo .error.class)" invalid_response
expect_err "script exhausted"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type='llm.request' AND json_extract(payload,'\$.stage')='execute'")" 5 "exhaustion is not retried"
chat --stage plan
expect_rc 1 "plan exhausted too"; expect_err "script exhausted"
expect_eq "$(sql "SELECT group_concat(stage || '=' || next_line, ',') FROM (SELECT * FROM llm_script_cursors ORDER BY stage) AS q1")" "*=8,plan=3,review=9"

# an edited script starts over (new hash)
echo '{"content":"fresh"}' >>"$GOALD_LLM_SCRIPT"
chat --stage execute
expect_rc 0; expect_eq "$(jqo .message.content)" first

# without a database (doctor's way) positions are per process: covered by
# doctor --llm in llm_doctor.sh

# --- a script that does not parse names the line --------------------------------
printf '{"content":"ok"}\n{"content": oops}\n' >"$T/bad.jsonl"
GOALD_LLM_SCRIPT="$T/bad.jsonl" chat --stage execute
expect_rc 1 "bad script"; expect_eq "$(jqo .error.class)" invalid_response
expect_err "bad.jsonl:2: not valid JSON"
printf '{"contents":"typo"}\n' >"$T/bad2.jsonl"
GOALD_LLM_SCRIPT="$T/bad2.jsonl" chat --stage execute
expect_rc 1; expect_err 'bad2.jsonl:1: unknown key "contents"'
GOALD_LLM_SCRIPT="$T/missing.jsonl" chat --stage execute
expect_rc 1; expect_eq "$(jqo .error.class)" invalid_response

# --- failover between two scripted models; model index reported --------------
cat >"$T/chain.json" <<J
{"llm": {"models": [
  {"provider": "script", "model": "small", "script": "$T/f.jsonl", "price_in": 1.0, "price_cached_in": 0.5, "price_out": 4.0},
  {"provider": "script", "model": "large", "script": "$T/f.jsonl", "price_in": 10.0, "price_out": 40.0}]}}
J
cat >"$T/f.jsonl" <<'S'
{"error":"context_length"}
{"content":"large answered","usage":{"input":1000000,"cached_input":0,"output":100000}}
{"content":"small answered","usage":{"input":2000000,"cached_input":1000000,"output":1000000}}
S
echo '{"title":"accounting","budget":{"max_tokens":5000000,"max_cost_usd":100}}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0; GOAL=$OUT
sql "INSERT INTO runs (id, goal_id, kind, lane, created_at) VALUES ('run-a', '$GOAL', 'execute', 'work', 0)"
unset GOALD_LLM_SCRIPT
run "$G" --config "$T/chain.json" llm chat --json --stage execute --run run-a <"$T/req.json"
expect_rc 0 "scripted failover"
expect_eq "$(jqo .model_index)" 1
expect_eq "$(jqo .model)" large
expect_eq "$(jqo .cost_usd)" 14 "1M in at \$10 + 0.1M out at \$40"
expect_eq "$(sql "SELECT tokens_in || ' ' || tokens_cached || ' ' || tokens_out || ' ' || cost_usd FROM runs WHERE id='run-a'")" "1000000 0 100000 14.0"
expect_eq "$(sql "SELECT spent_tokens || ' ' || spent_cost_usd FROM goals WHERE id='$GOAL'")" "1100000 14.0"
expect_eq "$(sql "SELECT provider || ' ' || model FROM runs WHERE id='run-a'")" "script large"
expect_eq "$(sql "SELECT json_extract(payload,'\$.from') || '>' || json_extract(payload,'\$.to') FROM events WHERE type='llm.failover'")" "small>large"
# the model index persisted by the caller is where the next call starts
run "$G" --config "$T/chain.json" llm chat --json --stage execute --run run-a --model-index 0 <"$T/req.json"
expect_rc 0
expect_eq "$(jqo .model)" small
expect_eq "$(jqo .cost_usd)" 5.5 "1M at \$1 + 1M cached at \$0.5 + 1M out at \$4"
expect_eq "$(sql "SELECT tokens_in || ' ' || tokens_cached || ' ' || tokens_out || ' ' || cost_usd FROM runs WHERE id='run-a'")" "3000000 1000000 1100000 19.5"
expect_eq "$(sql "SELECT spent_tokens FROM goals WHERE id='$GOAL'")" 4100000
# every llm.response is in the same transaction as its usage: counts agree
expect_eq "$(sql "SELECT sum(json_extract(payload,'\$.tokens_in') + json_extract(payload,'\$.tokens_out')) FROM events WHERE type='llm.response' AND goal_id='$GOAL'")" 4100000

# --- budget: a goal past its token budget gets no more calls ------------------
sql "UPDATE goals SET budget_max_tokens = 4000000 WHERE id='$GOAL'"
echo '{"content":"should not be served"}' >>"$T/f.jsonl"
run "$G" --config "$T/chain.json" llm chat --json --stage execute --run run-a <"$T/req.json"
expect_rc 1 "budget"
expect_eq "$(jqo .error.class)" budget
expect_eq "$(jqo .model_index)" 0 "budget does not fail over"
expect_err "token budget spent"

# --- configuration errors are usage errors -----------------------------------
echo '{"llm":{"models":[{"provider":"openai","model":"x","api_key":"sk-nope"}]}}' >"$T/badcfg.json"
run "$G" --config "$T/badcfg.json" llm chat --stage execute <"$T/req.json"
expect_rc 2 "unknown model key"; expect_err "llm.models[0].api_key: unknown key"
env -u GOALD_LLM_SCRIPT "$G" llm chat --stage execute <"$T/req.json" 2>"$T/e" && fail "no model configured"
grep -q "no model is configured" "$T/e" || fail "message: $(cat "$T/e")"; ok

# --- a long script: each process serves the right line, reading only what ---
# --- it looks at once a process has checked the whole file -----------------
# 40,000 pairs of plan/review lines (about 5 MB), unstaged lines early on,
# a comment and a blank line among them
L="$T/long.jsonl"
{
    echo '# a long script'
    for i in 0 1 2; do echo "{\"content\":\"any $i\"}"; done
    echo
    awk 'BEGIN { for (i = 0; i < 40000; i++) {
        printf "{\"stage\":\"plan\",\"content\":\"plan %d\",\"usage\":{\"input\":%d,\"output\":1}}\n", i, i
        printf "{\"stage\":\"review\",\"content\":\"review %d\",\"usage\":{\"input\":%d,\"output\":1}}\n", i, i } }'
} >"$L"
lchat() { GOALD_LLM_SCRIPT="$L" chat "$@"; }
lchat --stage review
expect_rc 0; expect_eq "$(jqo .message.content)" "any 0" "an unstaged line goes to any stage first"
# the first process checked the file whole and kept what it found
expect_eq "$(sql "SELECT sha256 || ' ' || lines || ' ' || last_unstaged FROM llm_scripts WHERE path = '$(realpath "$L")'")" \
    "$(sha256sum "$L" | cut -d' ' -f1) $(wc -l <"$L") 3" "what the check found"
for want in "any 1:plan" "any 2:plan" "review 0:review" "plan 0:plan" "plan 1:plan" "review 1:review"; do
    lchat --stage "${want#*:}"
    expect_rc 0; expect_eq "$(jqo .message.content)" "${want%:*}" "${want#*:} served"
done
# far along the file: the cursors move over the lines of the other stage
sql "UPDATE llm_script_cursors SET next_line = 70005 WHERE path = '$(realpath "$L")' AND stage = 'review'"
lchat --stage review
expect_rc 0; expect_eq "$(jqo .message.content)" "review 35000" "a line far along"
lchat --stage execute
expect_rc 1 "no line left for execute"; expect_err "script exhausted"
# a process that recalls the check parses only from the cursors on: ten
# requests on the long script cost about what ten on a short one do
short="$T/short.jsonl"
awk 'BEGIN { for (i = 0; i < 10; i++) printf "{\"stage\":\"plan\",\"content\":\"p\"}\n" }' >"$short"
cpu_ms() { # CPU (ms) of ten `llm chat --stage plan` processes on script $1
    local t
    TIMEFORMAT='%3U %3S'
    t=$( { time (for _ in 1 2 3 4 5 6 7 8 9 10; do
        GOALD_LLM_SCRIPT="$1" "$G" llm chat --json --stage plan <"$T/req.json" >/dev/null 2>&1; done) ; } 2>&1)
    awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%d", 1000 * (a[1] + a[2]) }'
}
GOALD_LLM_SCRIPT="$short" chat --stage plan
long_ms=$(cpu_ms "$L"); short_ms=$(cpu_ms "$short")
[ "$long_ms" -le $((2 * short_ms + 1500)) ] ||
    fail "ten requests on the long script took ${long_ms} ms of CPU, on a short one ${short_ms} ms"; ok
# the last of those was line 35,001 + 10 of the plan lines
lchat --stage plan
expect_rc 0; expect_eq "$(jqo .message.content)" "plan 12" "the cursor after ten more"
# an edit is a new stamp: the new file is checked whole again
echo '{"content": oops}' >>"$L"
lchat --stage plan
expect_rc 1 "an edited long script with a bad line"; expect_err "long.jsonl:80006: not valid JSON"

done_tests
