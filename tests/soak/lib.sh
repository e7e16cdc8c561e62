# lib.sh - the soak tests' setup (sourced; not a test of its own): one
# repository every goal works on, the generic model script for SOAK_GOALS
# goals, quick ticks and backoffs.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"
command -v sqlite3 >/dev/null || fail "sqlite3 (the shell) is needed (scripts/install-deps)"
export SOAK_TMP="$T" SOAK_REPO="$T/repo"
export GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50 GOALD_CONTROL_BACKOFF_MAX_MS=200
# the short requests come as fast as they are answered
export GOALD_HTTP_RATE_LIMIT_PER_MIN=1000000
export GOALD_LLM_SCRIPT="$T/script.jsonl"
script_generic "${SOAK_GOALS:-50}" 0 1 >"$GOALD_LLM_SCRIPT"
make_project "$SOAK_REPO"
# goals submitted over HTTP may name the soak's repository
GOALD_HTTP_REPOS=$(jq -nc --arg r "$SOAK_REPO" '[$r]')
export GOALD_HTTP_REPOS
soak() { # soak MODE
    /usr/bin/python3 "$GOALD_SOURCE_DIR/tests/soak/soak.py" "$1" ||
        fail "soak $1 (logs: $T/daemon.log*, $T/serve.err; GOALD_KEEP_TMP=1 keeps them)"
    ok
}
