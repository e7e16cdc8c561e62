#!/usr/bin/env bash
# goald tool NAME --root DIR --args JSON: the envelope, exit codes, events.
. "$(dirname "$0")/lib.sh"

W="$T/wt"
mkdir -p "$W"

run "$G" tool --help
expect_rc 0
expect_out "--root DIR"
expect_out "--allow LIST"

run "$G" tool read --args '{"path":"x"}'
expect_rc 2
expect_err "goald: tool: --root DIR is required"
run "$G" tool read --root "$T/nope" --args '{}'
expect_rc 2
expect_err "not a folder"
run "$G" tool read --root "$W" --args '{"path":'
expect_rc 2
expect_err "goald: tool: --args: expected a JSON object"
run "$G" tool rm --root "$W" --args '{}'
expect_rc 2
json_ok
expect_eq "$(jqo .error_class)" validation
expect_eq "$(jqo .output)" 'unknown tool "rm" (tools: ls, find, grep, read, write, edit, bash, run_gates, complete, ask_human, run_at_start)'

# write then read: the envelope
run "$G" tool write --root "$W" --args '{"path":"d/hello.txt","content":"hi\nthere\n"}'
expect_rc 0
json_ok
expect_eq "$(jqo .ok)" true
expect_eq "$(jqo .output)" "Wrote 9B to d/hello.txt"
expect_eq "$(cat "$W/d/hello.txt")" "hi
there"
run "$G" tool read --root "$W" --args '{"path":"d/hello.txt","limit":1}'
expect_rc 0
expect_eq "$(jqo '[.ok, .is_error, .exit_code, .truncated, .total_lines, .total_bytes, .next_offset, .spill_path] | @csv')" 'true,false,0,false,2,9,2,'
expect_eq "$(jqo .output)" "hi

[1 more lines in file. Use offset=2 to continue.]"
expect_eq "$(jqo 'has("error_class")')" false

# a refused path is a delivered envelope: exit 0, ok=false, class policy
run "$G" tool write --root "$W" --args '{"path":"../escape.txt","content":"x"}'
expect_rc 0
expect_eq "$(jqo .ok)" false
expect_eq "$(jqo .is_error)" true
expect_eq "$(jqo .error_class)" policy
[ ! -e "$T/escape.txt" ] || fail "escape.txt written"
ok

# allowed actions
run "$G" tool bash --root "$W" --allow read,edit --args '{"command":"touch made"}'
expect_rc 0
expect_eq "$(jqo .error_class)" policy
expect_eq "$(jqo .output)" "bash: not among the goal's allowed actions (read, edit)"
[ ! -e "$W/made" ] || fail "bash ran although not allowed"
ok
run "$G" tool grep --root "$W" --allow read --args '{"pattern":"there"}'
expect_eq "$(jqo .output)" "d/hello.txt:2: there"

# schemas for the LLM tools list
run "$G" tool --schemas
expect_rc 0
expect_eq "$(jqo 'map(.name) | join(",")')" "ls,find,grep,read,write,edit,bash,run_gates,complete,ask_human,run_at_start"
expect_eq "$(jqo '.[] | select(.name == "read") | .parameters.required | join(",")')" "path"
run "$G" tool --schemas --allow read,bash
expect_eq "$(jqo 'map(.name) | join(",")')" "ls,find,grep,read,bash,complete,ask_human,run_at_start"

# the caller's tools need a run
run "$G" tool ask_human --root "$W" --args '{"question":"which one?"}'
expect_rc 0
expect_eq "$(jqo .output)" "ask_human: only available inside a run"

# events (GOALD_DB is set by lib.sh)
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'tool_call.started'")" 7
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'tool_call.completed'")" 3
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'tool_call.failed'")" 4
expect_eq "$(sql "SELECT json_extract(payload, '\$.error_class') FROM events WHERE type = 'tool_call.failed' AND json_extract(payload, '\$.tool') = 'write'")" policy
expect_eq "$(sql "SELECT json_extract(payload, '\$.arguments') FROM events WHERE type = 'tool_call.started' AND json_extract(payload, '\$.tool') = 'bash'")" '{"command":"touch made"}'
expect_eq "$(sql "SELECT json_type(payload, '\$.latency_ms') FROM events WHERE type = 'tool_call.completed' LIMIT 1")" integer

# secrets never reach the output or the events
run "$G" tool bash --root "$W" --args '{"command":"echo AWS=AKIAIOSFODNN7EXAMPLE; echo X_TOKEN=q8Hn2LxZ0pWm"}'
expect_eq "$(jqo .output)" "AWS=***REDACTED***
X_TOKEN=***REDACTED***
[goald: 2 secrets masked in this output as ***REDACTED***; the files hold the real text]"
expect_eq "$(sql "SELECT count(*) FROM events WHERE payload LIKE '%AKIAIOSFODNN7EXAMPLE%' OR payload LIKE '%q8Hn2LxZ0pWm%'")" 0

done_tests
