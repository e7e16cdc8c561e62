#!/usr/bin/env bash
# A planted API key must appear nowhere but in the request to the
# provider: not in the database file, the events, stderr or a log - even
# when the provider echoes it back in a 401 body.
. "$(dirname "$0")/lib.sh"

KEY=sk-test-PLANTED-7f3a9c2e4b1d8a6f5e0c
printf '[{"role":"user","content":"hi"}]' >"$T/req.json"
submit_goal() {
    echo '{"title":"secret test","budget":{"max_tokens":100000}}' >"$T/goal.json"
    run "$G" submit "$T/goal.json"
    expect_rc 0 submit
    GOAL=$OUT
    sql "INSERT INTO runs (id, goal_id, kind, lane, created_at) VALUES ('run-s', '$GOAL', 'execute', 'work', 0)"
}

for mode in openai anthropic; do
    db_reset
    cat >"$T/$mode.jsonl" <<'S'
{"status":401,"echo_key":true,"repeat":0}
S
    start_fake_llm "$mode" "$mode" "$T/$mode.jsonl"
    submit_goal
    if [ "$mode" = openai ]; then
        export OPENAI_API_KEY=$KEY; unset ANTHROPIC_API_KEY
    else
        export ANTHROPIC_API_KEY=$KEY; unset OPENAI_API_KEY
    fi
    export GOALD_LLM_PROVIDER=$mode GOALD_LLM_MODEL=m1 GOALD_LLM_FALLBACK_MODEL=m2 \
        GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LOG_LEVEL=debug
    run "$G" llm chat --json --stage execute --run run-s <"$T/req.json"
    expect_rc 1 "$mode 401"
    expect_eq "$(jqo .error.class)" auth
    expect_eq "$(fake_requests)" 2 "$mode: auth not retried; one failover to m2"
    # the key did reach the provider (so the search below can find it)
    grep -q -- "$KEY" "$FAKE_LOG" || fail "$mode: the key was not sent"; ok
    # ... and the echoed body was quoted, redacted
    expect_err "REDACTED"
    case "$ERR$OUT" in *"$KEY"*) fail "$mode: key on stderr/stdout: $ERR $OUT" ;; esac; ok
    run "$G" events --json
    case "$OUT" in *"$KEY"*) fail "$mode: key in events" ;; esac; ok
    case "$OUT" in *llm.error*) ok ;; *) fail "$mode: no llm.error event: $OUT" ;; esac
    # the raw database files, WAL included, before and after a checkpoint
    for f in "$GOALD_DB" "$GOALD_DB-wal"; do
        [ -f "$f" ] || continue
        if grep -a -q -- "$KEY" "$f"; then fail "$mode: key in $f"; fi; ok
    done
    sqlite3 "$GOALD_DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
    if grep -a -q -- "$KEY" "$GOALD_DB"; then fail "$mode: key in the database"; fi; ok
    # a fragment of the key neither (a partial echo)
    if grep -a -q -- "${KEY:8:20}" "$GOALD_DB"; then fail "$mode: key fragment in the database"; fi; ok
    # doctor shows the variable name, never the value
    run "$G" doctor --json
    case "$OUT$ERR" in *"$KEY"*) fail "$mode: doctor printed the key" ;; esac; ok
    expect_eq "$(jqo '[.checks[] | select(.name=="llm[0]")][0].key_set')" true
done
done_tests
