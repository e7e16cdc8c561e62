# lib.sh - shared helpers for integration tests that drive the real goald.
#
# Each test sources this file, gets a fresh temporary folder in $T (removed
# on exit unless GOALD_KEEP_TMP=1) with GOALD_DB pointing inside it, and
# uses the check helpers below; the first failed check prints what was
# expected and what came, and exits 1.
set -u
: "${GOALD_BIN:?GOALD_BIN must point at the goald binary}"
G="$GOALD_BIN"
T=$(mktemp -d "${TMPDIR:-/tmp}/goald-test.XXXXXX")
export GOALD_DB="$T/goald.db"
export HOME="$T/home"
export XDG_STATE_HOME="$T/state" XDG_CONFIG_HOME="$T/config"
mkdir -p "$HOME"
unset GOALD_CONFIG GOALD_LLM_PROVIDER GOALD_LLM_BASE_URL GOALD_LLM_MODEL GOALD_LLM_API_KEY \
      OPENAI_API_KEY ANTHROPIC_API_KEY GOALD_LLM_FALLBACK_MODEL
FAKE_PIDS=""
# A leak found at exit must not pass for an expected "exit 1": LeakSanitizer
# exits 23 instead (sanitized builds only; harmless otherwise).
export LSAN_OPTIONS="exitcode=23${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
cleanup() {
    for p in $FAKE_PIDS; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    [ -z "${FORGE_PID:-}" ] || { kill "$FORGE_PID" 2>/dev/null; wait "$FORGE_PID" 2>/dev/null; }
    [ "${GOALD_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
TESTS_RUN=0

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { TESTS_RUN=$((TESTS_RUN + 1)); }
# nap SECONDS: sleep without a process (read times out on a FIFO nobody
# writes): a poll loop forks only for what it checks.
mkfifo "$T/.nap"
exec {NAP_FD}<>"$T/.nap"
nap() { read -r -t "$1" -u "$NAP_FD" _ || :; }
# wait_until TIMEOUT_S CMD...: polls CMD until it succeeds; fails after
# TIMEOUT_S.  Every 50 ms for the first half second, every 100 ms up to
# 2 s, then every 250 ms: a check is a process or two (a psql is also a
# server backend), and a long wait polled at 20 Hz was most of a test's
# CPU.
wait_until() {
    local limit=$1 start now delay
    shift
    start=${EPOCHREALTIME/[.,]/}
    while :; do
        if "$@"; then return 0; fi
        now=${EPOCHREALTIME/[.,]/}
        now=$(((now - start) / 1000)) # ms since the start
        [ "$now" -lt $((limit * 1000)) ] || break
        if [ "$now" -lt 500 ]; then delay=0.05
        elif [ "$now" -lt 2000 ]; then delay=0.1
        else delay=0.25; fi
        nap "$delay"
    done
    # a test may define wait_diag to say what it saw instead
    if declare -F wait_diag >/dev/null; then
        fail "timed out after ${limit}s waiting for: $* ($(wait_diag 2>&1 | head -c 2000))"
    fi
    fail "timed out after ${limit}s waiting for: $*"
}

# run CMD...: runs it, leaving $OUT, $ERR and $RC.
run() {
    set +e
    "$@" >"$T/.out" 2>"$T/.err"
    RC=$?
    set -e
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
}

expect_rc() { [ "$RC" = "$1" ] || fail "${2:-command}: expected exit $1, got $RC; stderr: $ERR; stdout: $OUT"; ok; }
expect_out() { case "$OUT" in *"$1"*) ok ;; *) fail "${2:-stdout} lacks \"$1\": $OUT" ;; esac; }
# goald wraps its messages at 80 columns (continuation lines indented by
# 7): the stderr checks see each message on one line again
unwrapped_err() { printf '%s' "$ERR" | sed -z 's/\n       \([^ ]\)/ \1/g'; }
expect_err() { case "$(unwrapped_err)" in *"$1"*) ok ;; *) fail "${2:-stderr} lacks \"$1\": $ERR" ;; esac; }
expect_err_exact() { [ "$(unwrapped_err)" = "$1" ] || fail "stderr: expected [$1], got [$ERR]"; ok; }
expect_eq() { [ "$1" = "$2" ] || fail "${3:-value}: expected [$2], got [$1]"; ok; }
# json_ok: $OUT parses as JSON
json_ok() { printf '%s' "$OUT" | jq -e . >/dev/null 2>&1 || fail "${1:-output} is not JSON: $OUT"; ok; }
# jqo FILTER: apply jq to $OUT
jqo() { printf '%s' "$OUT" | jq -r "$1"; }
sql() { sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "$1"; }
# db_use NAME: from now on the test's database is a fresh one named NAME
# (a file $T/NAME.db; with GOALD_TEST_PG, a schema of that PostgreSQL
# database).  db_reset: the current one, emptied.
db_use() { export GOALD_DB="$T/$1.db"; }
db_reset() { rm -f "$GOALD_DB" "$GOALD_DB-wal" "$GOALD_DB-shm"; }
# GOALD_TEST_PG (a URL, or @FILE holding one: the pg fixture's): the test
# runs on fresh schemas of that PostgreSQL database instead of files, and
# sql() asks psql (rows as sqlite3 prints them: fields joined by |).
if [ -n "${GOALD_TEST_PG:-}" ]; then
    PG_BASE=$GOALD_TEST_PG
    case "$PG_BASE" in @*) PG_BASE=$(cat "${PG_BASE#@}") ;; esac
    PG_PREFIX="t_$(basename "$T" | tr -c 'a-zA-Z0-9\n' _ | tr 'A-Z' 'a-z')"
    # pg_schema NAME: a fresh schema, with group_concat, ifnull and printf
    # for the tests' own queries, which are SQLite's (goald's SQL needs none)
    pg_schema() {
        psql -qX -v ON_ERROR_STOP=1 "$PG_BASE" >/dev/null <<EOSQL || fail "cannot make schema $1"
DROP SCHEMA IF EXISTS $1 CASCADE;
CREATE SCHEMA $1;
CREATE FUNCTION $1.gc_step(acc text, v anyelement, sep text) RETURNS text
  LANGUAGE sql IMMUTABLE AS \$\$ SELECT CASE WHEN v IS NULL THEN acc WHEN acc IS NULL THEN v::text
  ELSE acc || sep || v::text END \$\$;
CREATE FUNCTION $1.gc_step(acc text, v anyelement) RETURNS text
  LANGUAGE sql IMMUTABLE AS \$\$ SELECT $1.gc_step(acc, v, ',') \$\$;
CREATE AGGREGATE $1.group_concat(anyelement, text) (SFUNC = $1.gc_step, STYPE = text);
CREATE AGGREGATE $1.group_concat(anyelement) (SFUNC = $1.gc_step, STYPE = text);
CREATE FUNCTION $1.printf(fmt text, v double precision) RETURNS text
  LANGUAGE sql IMMUTABLE AS \$\$ SELECT to_char(v, 'FM999999999990.' ||
  repeat('0', substring(fmt from '%\\.([0-9]+)f')::int)) \$\$;
CREATE FUNCTION $1.ifnull(a anyelement, b anyelement) RETURNS anyelement
  LANGUAGE sql IMMUTABLE AS \$\$ SELECT coalesce(a, b) \$\$;
EOSQL
    }
    db_use() {
        PG_SCHEMA="${PG_PREFIX}_$1"
        pg_schema "$PG_SCHEMA"
        case "$PG_BASE" in *\?*) GOALD_DB="$PG_BASE&" ;; *) GOALD_DB="$PG_BASE?" ;; esac
        export GOALD_DB="${GOALD_DB}options=-csearch_path%3D$PG_SCHEMA"
    }
    db_reset() { pg_schema "$PG_SCHEMA"; }
    db_use main
    sql() { psql -qXAt -F '|' -v ON_ERROR_STOP=1 "$GOALD_DB" -c "$1"; }
fi

# make_repo DIR: a git repository with one commit on main.
make_repo() {
    mkdir -p "$1"
    git -C "$1" init -q -b main
    git -C "$1" config user.email t@example.com
    git -C "$1" config user.name test
    echo "hello" >"$1/README"
    git -C "$1" add README
    git -C "$1" commit -q -m init
}

# start_fake_llm NAME MODE SCRIPT: starts tests/fakes/fake_llm (openai or
# anthropic mode) on a free loopback port; sets FAKE_URL (base URL, ending
# in /v1) and FAKE_LOG (its request log, one JSON line per request).
start_fake_llm() {
    local name=$1 mode=$2 script=$3 i
    : "${GOALD_BUILD_DIR:?GOALD_BUILD_DIR must point at the build folder}"
    rm -f "$T/$name.port"
    FAKE_LOG="$T/$name.log"
    : >"$FAKE_LOG"
    # shellcheck disable=SC2086 # FAKE_LLM_ARGS: extra options (--realistic)
    "$GOALD_BUILD_DIR/tests/fake_llm" --port-file "$T/$name.port" --mode "$mode" ${FAKE_LLM_ARGS:-} \
        --script "$script" --log "$FAKE_LOG" 2>"$T/$name.stderr" &
    FAKE_PIDS="$FAKE_PIDS $!"
    for i in $(seq 1 200); do
        [ -s "$T/$name.port" ] && break
        nap 0.05
    done
    [ -s "$T/$name.port" ] || fail "fake_llm $name did not start: $(cat "$T/$name.stderr")"
    FAKE_URL="http://127.0.0.1:$(cat "$T/$name.port")/v1"
}

# fake_requests: how many requests the fake logged.
fake_requests() { grep -c . "$FAKE_LOG" || true; }

# forge_start [--require-token T]: start tests/fakes/fake_forge on loopback
# (docs/publishing.md); sets FORGE_URL (http://127.0.0.1:PORT), FORGE_LOG
# (one JSON line per request) and FORGE_PID; stopped on exit.
forge_start() {
    : "${GOALD_BUILD_DIR:?GOALD_BUILD_DIR must point at the build folder}"
    FORGE_LOG="$T/forge.jsonl"
    rm -f "$T/forge.port"
    "$GOALD_BUILD_DIR/tests/fake_forge" --port-file "$T/forge.port" --log "$FORGE_LOG" "$@" &
    FORGE_PID=$!
    for _ in $(seq 1 500); do [ -s "$T/forge.port" ] && break; nap 0.01; done
    [ -s "$T/forge.port" ] || fail "fake_forge did not start"
    FORGE_URL="http://127.0.0.1:$(cat "$T/forge.port")"
}
# forge_count METHOD PATH: how many such requests the fake forge received.
forge_count() { jq -s --arg m "$1" --arg p "$2" '[.[] | select(.method == $m and .path == $p)] | length' "$FORGE_LOG"; }

# max_cols: the widest line (in characters, UTF-8) of stdin.
max_cols() { python3 -c 'import sys; print(max([len(l.rstrip("\n")) for l in sys.stdin.buffer.read().decode("utf-8", "replace").split("\n")] + [0]))'; }

# long_lines N: the lines of stdin longer than N characters.
long_lines() { python3 -c 'import sys
for l in sys.stdin.buffer.read().decode("utf-8", "replace").split("\n"):
    if len(l) > int(sys.argv[1]): print(l)' "$1"; }

done_tests() { echo "ok: $TESTS_RUN checks"; }
set -e
