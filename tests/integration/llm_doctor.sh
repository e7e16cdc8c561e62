#!/usr/bin/env bash
# goald doctor: the model list (key variable named, value never shown),
# the database, git identity, tools on PATH; --llm makes one round trip to
# each model of the chain against the fake; the exit code follows the checks.
. "$(dirname "$0")/lib.sh"

cat >"$T/d.jsonl" <<'S'
{"content":"ok","usage":{"input":11,"output":1},"repeat":0}
S
start_fake_llm doc openai "$T/d.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1 \
    GOALD_LLM_FALLBACK_MODEL=m2 GOALD_LLM_API_KEY=sk-test-doctor-0123456789

# tools on PATH: a folder with stand-ins, so the test does not depend on the host
mkdir -p "$T/bin"
for t in bwrap rg fdfind git; do
    p=$(command -v "$t" || true)
    if [ -n "$p" ]; then ln -s "$p" "$T/bin/$t"; else printf '#!/bin/sh\n' >"$T/bin/$t"; chmod +x "$T/bin/$t"; fi
done
# only goald sees this PATH
D() { PATH="$T/bin" "$G" "$@"; }

run D doctor --llm --json
expect_rc 0 "doctor --llm"
json_ok
expect_eq "$(jqo .ok)" true
expect_eq "$(jqo '[.checks[] | select(.name=="llm[0]")] | length')" 2 "config line + round trip"
expect_eq "$(jqo '[.checks[] | select(.name=="llm[0]")][0].api_key_env')" GOALD_LLM_API_KEY
expect_eq "$(jqo '[.checks[] | select(.name=="llm[0]")][0].key_set')" true
expect_eq "$(jqo '[.checks[] | select(.name=="llm[1]")][1].model')" m2
expect_eq "$(jqo '[.checks[] | select(.name=="llm[1]")][1].tokens_in')" 11
expect_eq "$(jqo '[.checks[] | select(.name=="database")][0].schema_version')" "$(sqlite3 "$GOALD_DB" 'SELECT max(version) FROM schema_migrations')"
expect_eq "$(jqo '[.checks[] | select(.name=="git")][0].status')" ok
case "$OUT" in *sk-test-doctor*) fail "doctor printed the key" ;; esac; ok
expect_eq "$(fake_requests)" 2 "one round trip per model"
expect_eq "$(jq -r '.headers["x-goald-stage"]' "$FAKE_LOG" | sort -u)" doctor
expect_eq "$(jq -r '.headers | has("x-goald-run")' "$FAKE_LOG" | sort -u)" true "X-Goald-Run sent, empty, without a run"

run D doctor --llm
expect_rc 0
expect_out "round trip: m1, 11+1 tokens"
expect_out "key GOALD_LLM_API_KEY set"
expect_out "all checks passed"

# a missing tool fails the doctor
rm "$T/bin/rg"
run D doctor
expect_rc 1 "no rg"
expect_out "fail  rg"

# a dead endpoint fails the round trip
ln -s "$(command -v rg || echo /bin/true)" "$T/bin/rg" 2>/dev/null || true
GOALD_LLM_BASE_URL=http://127.0.0.1:1/v1 GOALD_LLM_RETRY_MAX=0 run D doctor --llm --json
expect_rc 1 "dead endpoint"
expect_eq "$(jqo '[.checks[] | select(.name=="llm[0]")][1].class')" provider_api

# a hosted endpoint without its key: fail, and says NOT SET
env -u GOALD_LLM_API_KEY -u GOALD_LLM_BASE_URL PATH="$T/bin" "$G" doctor >"$T/o" 2>&1 && fail "missing key passed"
grep -q "key OPENAI_API_KEY NOT SET" "$T/o" || fail "$(cat "$T/o")"; ok
# the command table: doctor listed, llm chat hidden but with its own --help
run "$G" --help
expect_out "doctor"
case "$OUT" in *"llm chat"*) fail "llm chat listed in goald --help" ;; esac; ok
run "$G" llm chat --help
expect_rc 0; expect_out "--stage S"
run "$G" llm chat </dev/null
expect_rc 2 "llm chat without --stage"; expect_err "--stage is required"
done_tests
