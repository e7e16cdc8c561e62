#!/usr/bin/env bash
# pg.schema: migrations/pg/*.sql, loaded into an empty PostgreSQL database,
# build the schema that migrations/*.sql build in SQLite (the real binary
# makes that one): tests/pg/schema_diff.py compares them and prints every
# difference.  Also: every SQLite migration past the baseline has its
# PostgreSQL twin.  Uses the fixture's server ($GOALD_BUILD_DIR/pg/uri), or
# starts its own when run alone.
set -euo pipefail
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
PGS="$GOALD_SOURCE_DIR/tests/pg/pg-server"
M="$GOALD_SOURCE_DIR/migrations"
OWN=""
DB="schema_$$"
URI=""
finish() {
    [ -z "$URI" ] || psql -X -q "$URI" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    if [ -n "$OWN" ]; then "$PGS" stop "$OWN" || true; rm -rf "$OWN"; fi
    cleanup
}
trap finish EXIT

if [ -s "${GOALD_BUILD_DIR:-}/pg/uri" ] && "$PGS" status "$(cat "$GOALD_BUILD_DIR/pg/dir")"; then
    URI=$(cat "$GOALD_BUILD_DIR/pg/uri")
else
    OWN=$(mktemp -d /tmp/goald-pgschema.XXXXXX)
    URI=$("$PGS" start "$OWN")
fi

# versions: migrations/pg starts at the baseline 0012; after it, the same
# versions as SQLite's
versions() { for f in "$1"/[0-9][0-9][0-9][0-9]_*.sql; do b=${f##*/}; echo "$((10#${b:0:4}))"; done; }
lite=$(versions "$M" | awk '$1 > 12' | tr '\n' ' ')
pg=$(versions "$M/pg" | tr '\n' ' ')
[ "$pg" = "12 $lite" ] || fail "migrations/pg has versions [$pg], want [12 $lite] (a twin for each SQLite migration after 0012)"
ok

psql -X -q -v ON_ERROR_STOP=1 "$URI" -c "CREATE DATABASE $DB" >/dev/null
DBURI=${URI/\/\/\/goald\?/\/\/\/$DB\?}
for f in "$M"/pg/[0-9][0-9][0-9][0-9]_*.sql; do
    run psql -X -q -v ON_ERROR_STOP=1 -1 "$DBURI" -f "$f"
    expect_rc 0 "loading ${f##*/}"
done

run "$G" --db "$T/lite.db" migrate
expect_rc 0 "goald migrate (a fresh SQLite database)"

run python3 "$GOALD_SOURCE_DIR/tests/pg/schema_diff.py" "$T/lite.db" "$DBURI"
[ -z "$OUT" ] || echo "$OUT"
[ -z "$ERR" ] || echo "$ERR" >&2
expect_rc 0 "schema_diff"

# goald_json_valid behaves as json_valid in the CHECKs
run psql -X -q -At -v ON_ERROR_STOP=1 "$DBURI" -c "INSERT INTO events(ts, type, payload) VALUES (1, 't', '{oops')"
expect_rc 1 "an event whose payload is not JSON"
case "$ERR" in *events_payload_check*) ok ;; *) fail "invalid JSON: $ERR" ;; esac
run psql -X -q -At -v ON_ERROR_STOP=1 "$DBURI" \
    -c "INSERT INTO events(ts, type, payload) VALUES (1, 't', '{\"a\": [1, \"\\\\u00e9\"]}') RETURNING id"
expect_rc 0 "an event with a JSON payload"
echo "pg.schema: $TESTS_RUN checks passed"
