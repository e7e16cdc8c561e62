#!/usr/bin/env bash
# Context management's second step: when one-line stubs for old
# tool outputs are not enough (here the model's own long messages fill the
# window, its tool outputs are small), the older turns are condensed by a
# model call (stage condense) into a summary that replaces them; the run
# goes on and completes.  Each compaction is a context.compacted event with
# the tokens before and after and how ("condense").  The scripted model
# answers the condense call by its stage, whenever it comes.
. "$(dirname "$0")/lib.sh"

R="$T/repo"
make_repo "$R"
long=$(printf 'I keep thinking aloud about this repository at length. %.0s' $(seq 1 55)) # ~3 KiB
{
    echo '{"stage": "elaborate", "content": {"components": ["README"], "implicit_requirements": [], "success_criteria": ["notes written"], "allowed_actions": ["read", "write"], "verification": [{"name": "ok", "type": "test", "command": "test -f notes.txt", "must_pass": true}]}}'
    echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "think and write notes", "description": "", "type": "doc", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}}'
    for i in $(seq 1 14); do
        printf '{"stage": "execute", "content": "turn %s: %s", "tool_calls": [{"name": "read", "arguments": {"path": "README"}}]}\n' "$i" "$long"
    done
    echo '{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "notes\n"}}]}'
    echo '{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "notes.txt written"}}]}'
    echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}}'
    for _ in 1 2 3 4 5 6; do
        echo '{"stage": "condense", "content": {"summary": "CONDENSED: the model read README again and again and thought aloud."}}'
    done
} >"$T/s.jsonl"
export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_LLM_CONTEXT_WINDOW=8192 GOALD_CONTROL_MAX_TURNS=40
echo "{\"title\": \"condense\", \"repo\": \"$R\", \"base_branch\": \"main\", \"allowed_actions\": [\"read\", \"write\"]}" >"$T/g.json"
run "$G" submit "$T/g.json"; expect_rc 0 submit
gid=$OUT
run "$G" daemon --once
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$gid'")" completed "the goal completes"
ev=$(sql "SELECT payload FROM events WHERE type = 'context.compacted' ORDER BY id")
[ -n "$ev" ] || fail "no context.compacted event"; ok
ncond=$(sql "SELECT count(*) FROM events WHERE type = 'context.compacted' AND json_extract(payload, '$.how') LIKE '%condense%'")
[ "$ncond" -ge 1 ] || fail "no compaction by condense: $ev"; ok
bad=$(sql "SELECT count(*) FROM events WHERE type = 'context.compacted' AND json_extract(payload, '$.tokens_after') >= json_extract(payload, '$.tokens_before')")
expect_eq "$bad" 0 "every compaction makes the request smaller"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'llm.request' AND json_extract(payload, '$.stage') = 'condense'")" "$ncond" \
    "one condense call per condensing compaction"
# the condense call's failure, had there been one, is in the event
[ -z "$(sql "SELECT 1 FROM events WHERE type = 'context.compacted' AND json_extract(payload, '$.condense_error') IS NOT NULL")" ] ||
    fail "a condense call failed: $ev"
ok
done_tests
