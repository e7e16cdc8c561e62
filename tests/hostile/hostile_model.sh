#!/usr/bin/env bash
# The hostile model harness: a model (the fake OpenAI server) that returns a
# huge output request, invalid tool arguments, an unknown tool, path escapes,
# a command that tries the network, a read of planted secrets and endless
# identical calls.  goald must stay up, classify each, stay within budget
# and leak no secret: the planted values are searched in the database, the
# logs and every request sent to the fake.
. "$(dirname "$0")/../integration/lib.sh"

AWS=AKIAQWERTYUIOPASDFGH
GHP=ghp_0123456789abcdefghijABCDEFGHIJklmnop12
BEARER=eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.SIGNATUREpart
# (a token by its shape: a keyword-assigned value is masked when it looks
# random, as gitleaks' generic rule judges it, not a word like "hunter2")
XTOK=hU7nT3r2bUtL0ng3r9x3Q
export OPENAI_API_KEY=sk-test-PLANTED-hostile-0123456789
escape=/tmp/goald-hostile-escape-$$
rm -f "$escape"

repo="$T/repo"
make_repo "$repo"
printf '#!/bin/sh\nexit 0\n' >"$repo/test.sh"
printf 'aws_access_key_id = %s\nGITHUB_TOKEN=%s\nAuthorization: Bearer %s\nX_TOKEN=%s\n' \
    "$AWS" "$GHP" "$BEARER" "$XTOK" >"$repo/secrets.env"
git -C "$repo" add -A && git -C "$repo" commit -q -m secrets

# a listener the sandbox must not reach
python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); import time; time.sleep(120)' >"$T/listen.port" &
FAKE_PIDS="$FAKE_PIDS $!"
for _ in $(seq 1 100); do [ -s "$T/listen.port" ] && break; sleep 0.05; done
LPORT=$(cat "$T/listen.port")

call() { printf '{"tool_calls": [{"name": "%s", "arguments": %s}], "usage": {"input": 1000, "output": 50}}\n' "$1" "$2"; }
{
    echo '{"content": {"components": ["repo"], "implicit_requirements": [], "success_criteria": ["test.sh passes"], "allowed_actions": ["ls", "read", "write", "edit", "bash", "run_gates"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]}, "usage": {"input": 500, "output": 100}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "do it", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}, "usage": {"input": 500, "output": 100}}'
    call bash '{"command": "head -c 3000000 /dev/zero | tr \"\\\\0\" x; seq 1 200000"}'
    call read '{"path": 5}'
    call rm_rf '{"path": "/"}'
    call read '{"path": "../../../etc/passwd"}'
    call write "{\"path\": \"$escape\", \"content\": \"escaped\"}"
    call bash "{\"command\": \"(exec 3<>/dev/tcp/127.0.0.1/$LPORT) 2>/dev/null && echo CONNECTED || echo NO_NETWORK\"}"
    call read '{"path": "secrets.env"}'
    call read '{"path": "README"}'
    call read '{"path": "README"}'
    call read '{"path": "README"}'
    call read '{"path": "README"}'
} >"$T/script.jsonl"

start_fake_llm hostile openai "$T/script.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake GOALD_LOG_LEVEL=debug
echo "{\"title\": \"hostile\", \"repo\": \"$repo\", \"budget\": {\"max_tokens\": 60000}}" >"$T/goal.json"
id=$("$G" submit "$T/goal.json")
for lane in plan plan; do r=$("$G" claim --lane $lane) && "$G" job "$r" >>"$T/jobs.out" 2>>"$T/jobs.err"; done
r=$("$G" claim --lane work)
run "$G" job "$r" --json
cat "$T/.err" >>"$T/jobs.err"
expect_rc 0 "the execute job survives the hostile model"
json_ok
expect_eq "$(jqo .status)" failed "run status"
expect_eq "$(jqo .error_class)" stalled "endless identical calls are stopped as stalled"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'progress.stalled' AND run_id = '$r'")" 1 "progress.stalled event"

# each misbehaviour classified
classes=$(sql "SELECT group_concat(json_extract(payload, '$.error_class'), ' ') FROM (SELECT payload FROM events WHERE type = 'tool_call.failed' AND run_id = '$r' ORDER BY id)")
expect_eq "$classes" "validation validation policy policy" "tool failures in order"
[ ! -e "$escape" ] || fail "write escaped to $escape"
ok
# the huge output reached the model cut, with a notice, and the request stayed small
size=$(awk 'NR==4 {print length($0)}' "$FAKE_LOG")
[ "$size" -lt 200000 ] || fail "the request after the huge output is $size bytes"
ok
sed -n 4p "$FAKE_LOG" | grep -q 'Showing\|truncated\|cut' || fail "no truncation notice sent to the model"
ok
# the network was not reachable from the sandbox
# (the command text itself names both words: look at the tool results only)
results=$(tail -n1 "$FAKE_LOG" | jq -r '.body.messages[] | select(.role == "tool") | .content')
grep -q '^NO_NETWORK' <<<"$results" || fail "the network probe's answer never reached the model"
ok
grep -q '^CONNECTED' <<<"$results" && fail "the sandbox reached 127.0.0.1:$LPORT"
ok

# within budget: never more than one call past the limit
spent=$(sql "SELECT spent_tokens FROM goals WHERE id = '$id'")
[ "$spent" -le 61050 ] || fail "spent $spent tokens of a 60000 budget"
ok

# no secret anywhere: database (and its WAL), logs, requests sent to the fake
bodies=$(jq -r '.body' "$FAKE_LOG")
grep -q 'REDACTED' <<<"$bodies" || fail "the secrets file was not redacted on its way to the model"
ok
for secret in "$AWS" "$GHP" "$BEARER" "$XTOK" "$OPENAI_API_KEY"; do
    grep -qF -- "$secret" <<<"$bodies" && fail "planted secret ${secret:0:8}... sent to the model"
    cat "$GOALD_DB"* | grep -qaF -- "$secret" && fail "planted secret ${secret:0:8}... in the database"
    grep -qF -- "$secret" "$T/jobs.err" "$T/jobs.out" && fail "planted secret ${secret:0:8}... in the logs"
    ok
done
done_tests
