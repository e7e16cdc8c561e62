#!/usr/bin/env bash
# Secrets out of reach:
# 1. a sandbox.env value is in no process's command line while a sandboxed
#    command runs (bubblewrap used to get it as `--setenv NAME VALUE`), with
#    bubblewrap and with GOALD_SANDBOX=none; the command still sees it;
# 2. under GOALD_SANDBOX=none a whole goal whose model reads
#    /proc/$PPID/environ, walks up its ancestors and reads the environment
#    of every goald process: the API key (given to the daemon only) is in
#    none of them, nor in the requests' bodies or the database - and the
#    job did get the key (the fake saw it in the Authorization header).
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

# --- 1. sandbox.env values never in a command line ---------------------------
W="$T/wt"
mkdir -p "$W"
VAL="sandbox-env-value-$$-Q7xv2"
for mode in bwrap none; do
    rm -f "$T/cmdlines" "$T/tool.out"
    GOALD_SANDBOX=$mode GOALD_SANDBOX_ENV='["CS_VALUE"]' CS_VALUE="$VAL" \
        "$G" tool bash --root "$W" --args '{"command": "env | grep -c Q7xv2 >count; sleep 6"}' \
        >"$T/tool.out" 2>&1 &
    tpid=$!
    # while it sleeps: every command line on the host, as ps shows them
    wait_until 20 test -s "$W/count"
    # (patterns from a file: the scanner's own command line must not match)
    printf 'sleep 6\n%s\n' "$VAL" >"$T/patterns"
    { grep -a -F -f "$T/patterns" /proc/[0-9]*/cmdline || true; } 2>/dev/null | tr '\0' ' ' >"$T/cmdlines"
    ps -eo args >>"$T/cmdlines" 2>/dev/null || true
    wait "$tpid" || fail "$mode: goald tool bash failed: $(cat "$T/tool.out")"
    grep -q 'sleep 6' "$T/cmdlines" || fail "$mode: the scan missed the running command"; ok
    if grep -F -- "$VAL" "$T/cmdlines"; then fail "$mode: a sandbox.env value is in a command line"; fi
    ok
    expect_eq "$(cat "$W/count")" 1 "$mode: the command sees its sandbox.env variable"
    rm -f "$W/count"
done
# bubblewrap passes its environment on: nothing but the sandbox's variables
GOALD_SANDBOX_ENV='["CS_VALUE"]' CS_VALUE="$VAL" OTHER_VAR=must-not-pass \
    "$G" tool bash --root "$W" --args '{"command": "env | cut -d= -f1 | sort | tr \"\\n\" \" \""}' >"$T/tool.out"
expect_eq "$(jq -r .output "$T/tool.out")" "CS_VALUE HOME LANG PATH PWD SHLVL TERM TMPDIR _ " \
    "the environment inside the sandbox"

# --- 2. the API key out of every goald process's environment ----------------
KEY="sk-test-PLANTED-contain-$$-0123456789abcdef"
LEAK="$T/leak.txt"
repo="$T/repo"
make_project "$repo"
# The model's probe: its ancestors, then every goald process.  The dump
# goes to a file outside the worktree (unconfined, it can) and, reversed so
# that no redactor hides it, to the tool result.
cat >"$repo/probe.sh" <<EOF
#!/bin/sh
{
p=\$\$
while [ "\$p" -gt 1 ] 2>/dev/null; do
    echo "== ancestor \$p: \$(tr '\\0' ' ' </proc/\$p/cmdline)"
    tr '\\0' '\\n' </proc/\$p/environ
    p=\$(sed 's/.*) //' /proc/\$p/stat | cut -d' ' -f2)
done
for d in /proc/[0-9]*; do
    case "\$(tr '\\0' ' ' <\$d/cmdline 2>/dev/null)" in
    *goald*) echo "== goald \$d"; tr '\\0' '\\n' <\$d/environ ;;
    esac
done
ps eww -e 2>/dev/null
} >"$LEAK" 2>&1
echo "lines: \$(wc -l <"$LEAK")"
rev "$LEAK" | grep -i -e key -e goald_secret || true
EOF
git -C "$repo" add probe.sh && git -C "$repo" commit -q -m probe
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["sh test.sh exits 0"],"allowed_actions":["read","edit","bash","run_gates"],"verification":[{"name":"tests","type":"test","command":"sh test.sh","must_pass":true}]}}'
    echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"fix add.sh","description":"make it add","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]}]}}'
    echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"cat /proc/$PPID/environ | tr \"\\\\0\" \"\\\\n\" | rev"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"sh probe.sh"}}]}'
    echo '{"stage":"execute","tool_calls":[{"name":"edit","arguments":{"path":"add.sh","old_text":"$(($1 - $2))","new_text":"$(($1 + $2))"}},{"name":"complete","arguments":{"summary":"fixed"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
} >"$T/script.jsonl"
start_fake_llm contain openai "$T/script.jsonl"
goal_json "$repo" "fix add.sh" '{"push": false, "pull_request": false}' "sh test.sh" >"$T/goal.json"
submit_goal "$T/goal.json"
# the key only in the daemon's own environment: not exported by this shell
# (an ancestor the probe reads too)
GOALD_SANDBOX=none GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake OPENAI_API_KEY="$KEY" \
    GOALD_LOG_LEVEL=debug "$G" daemon --once >"$T/daemon.out" 2>"$T/daemon.err"
RC=$? OUT=$(cat "$T/daemon.out") ERR=$(cat "$T/daemon.err")
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GOAL_ID'")" completed "the goal completes"
# the job had the key: it reached the provider
grep -qF -- "$KEY" "$FAKE_LOG" || fail "the job never sent the key: the handover failed"; ok
[ -s "$LEAK" ] || fail "the probe did not run"; ok
grep -q '== ancestor' "$LEAK" || fail "the probe read no ancestor: $(head -c 2000 "$LEAK")"; ok
grep -q '== goald' "$LEAK" || fail "the probe found no goald process: $(head -c 2000 "$LEAK")"; ok
# the probe read the daemon's environment (its other variables are there)
grep -q "^GOALD_LLM_MODEL=fake" "$LEAK" || fail "the probe read no goald environment"; ok
if grep -aF -- "$KEY" "$LEAK"; then fail "the key is readable in a process's environment"; fi; ok
if grep -aF -- "${KEY:8:20}" "$LEAK"; then fail "part of the key is readable"; fi; ok
# nor in what the model was sent, nor in the database, nor in the logs
rkey=$(printf '%s' "$KEY" | rev)
bodies=$(jq -c .body "$FAKE_LOG")
for k in "$KEY" "$rkey" "${KEY:8:20}" "$(printf '%s' "${KEY:8:20}" | rev)"; do
    grep -qF -- "$k" <<<"$bodies" && fail "the key (${k:0:10}...) was sent to the model"
    cat "$GOALD_DB"* | grep -qaF -- "$k" && fail "the key (${k:0:10}...) is in the database"
    grep -qF -- "$k" "$T/daemon.out" "$T/daemon.err" && fail "the key (${k:0:10}...) is in the logs"
    ok
done
# the tool results did reach the model (the probe's output is in the requests)
grep -qF 'lines: ' <<<"$bodies" || fail "the probe's result never reached the model"; ok
done_tests
