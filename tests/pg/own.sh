# own.sh - a PostgreSQL server of the test's own (tests/pg/pg-server), for
# the tests that stop or restart it, which would disturb the fixture's
# server and every test on it.  Sourced after tests/integration/lib.sh.
#
# own_pg_start: a server started in a new folder PGD, GOALD_DB (exported)
# its URI, the schema migrated.  At exit: on_finish, when the test defines
# one (its daemons killed), then the server stopped, PGD removed, lib.sh's
# cleanup.  sql SQL: psql on it, rows as a|b lines.
PGS="$GOALD_SOURCE_DIR/tests/pg/pg-server"

own_pg_finish() {
    ! declare -F on_finish >/dev/null || on_finish
    "$PGS" stop "$PGD" >/dev/null 2>&1 || true
    rm -rf "$PGD"
    cleanup
}

own_pg_start() {
    PGD=$(mktemp -d /tmp/goald-pg.XXXXXX)
    trap own_pg_finish EXIT
    export GOALD_DB
    GOALD_DB=$("$PGS" start "$PGD") || fail "cannot start a PostgreSQL server"
    "$G" migrate >/dev/null || fail "migrate"
}

sql() { psql -qXAt -F '|' -v ON_ERROR_STOP=1 "$GOALD_DB" -c "$1"; }
