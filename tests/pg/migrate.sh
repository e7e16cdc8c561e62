#!/usr/bin/env bash
# `goald migrate --to postgres://...` copies the project's fixture
# database (tests/fixtures/migrate_db.sh) into an empty PostgreSQL schema of
# the pg fixture's server: every goal's report, the goal list, the
# escalations, the events and the tokens read the same from both; the row
# counts match; a second copy into the now filled target is refused and
# changes nothing; new rows on PostgreSQL get ids after the copied ones.
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/migrate_db.sh"

PG_BASE=$(cat "$GOALD_BUILD_DIR/pg/uri") || fail "no pg fixture (${GOALD_BUILD_DIR}/pg/uri)"
schema="m_$(basename "$T" | tr -c 'a-zA-Z0-9\n' _ | tr 'A-Z' 'a-z')"
psql -qX -v ON_ERROR_STOP=1 "$PG_BASE" -c "CREATE SCHEMA $schema" >/dev/null || fail "create schema"
URL="$PG_BASE&options=-csearch_path%3D$schema"
pg() { psql -qXAt -v ON_ERROR_STOP=1 "$URL" -c "$1"; }
trap 'psql -qX "$PG_BASE" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1; rm -rf "${FIXTURE_DIR:-/nonexistent}"; cleanup' EXIT

make_fixture_db
SRC=$GOALD_DB

# what the CLI answers, as sorted JSON, from one database
answers() {
    local db=$1 id
    for cmd in "goals --json" "escalations --json" "events --json --tail 1000" "token list --json"; do
        echo "== $cmd"
        # shellcheck disable=SC2086
        "$G" --db "$db" $cmd | jq -S . || echo "FAILED: $cmd"
    done
    for id in $("$G" --db "$db" goals --json | jq -r '.[].id'); do
        echo "== report $id"
        "$G" --db "$db" report "$id" --json | jq -S . || echo "FAILED: report $id"
    done
}
answers "$SRC" >"$T/before.txt"
grep -q FAILED "$T/before.txt" && fail "a command failed on SQLite: $(grep FAILED "$T/before.txt")"
expect_eq "$(grep -c '^== report' "$T/before.txt")" 4 "goals in the fixture"
expect_eq "$(sqlite3 "$SRC" "SELECT count(*) FROM escalations WHERE status = 'open'")" 1 "an open escalation"

run "$G" --db "$SRC" migrate --to "$URL" --json
expect_rc 0 "migrate --to"
for t in goals work_items runs events context_packs escalations artifacts decisions \
         gate_results gate_cases gate_baselines api_tokens llm_script_cursors; do
    n=$(sqlite3 "$SRC" "SELECT count(*) FROM $t")
    expect_eq "$(jqo ".tables.$t")" "$n" "$t: rows reported"
    expect_eq "$(pg "SELECT count(*) FROM $t")" "$n" "$t: rows in PostgreSQL"
done
expect_eq "$(jqo '.total')" "$(jqo '[.tables[]] | add')" "total"
[ "$(jqo '.tables.events')" -gt 50 ] || fail "the fixture has too few events: $OUT"; ok

answers "$URL" >"$T/after.txt"
diff -u "$T/before.txt" "$T/after.txt" >"$T/diff.txt" ||
    fail "the answers differ after the copy: $(head -c 3000 "$T/diff.txt")"
ok

# a filled target is refused, and left as it was
before=$(pg "SELECT count(*) FROM events")
run "$G" --db "$SRC" migrate --to "$URL"
expect_rc 1 "migrate into a filled target"
expect_err "the target is not empty: its table goals holds 4 rows"
expect_eq "$(pg "SELECT count(*) FROM events")" "$before" "the refused copy wrote nothing"
run "$G" --db "$SRC" migrate --to "$T/not-a-url.db"
expect_rc 2 "--to a file"

# new rows continue after the copied ids
maxid=$(pg "SELECT max(id) FROM events")
goal_json "$T/repo" "a goal submitted on PostgreSQL" >"$T/new.json"
run "$G" --db "$URL" submit "$T/new.json"
expect_rc 0 "submit on PostgreSQL"
[ "$(pg "SELECT min(id) FROM events WHERE id > $maxid")" -gt "$maxid" ] && ok
expect_eq "$(pg "SELECT count(*) FROM events WHERE id <= $maxid AND type = 'goal.created'")" \
    "$(sqlite3 "$SRC" "SELECT count(*) FROM events WHERE type = 'goal.created'")" "old events untouched"
expect_eq "$(pg "SELECT count(*) FROM goals")" 5 "the new goal beside the copied ones"
echo "pg.migrate: $TESTS_RUN checks passed"
