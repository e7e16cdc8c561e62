#!/usr/bin/env bash
# A command that writes to a database that is not there yet says on
# stderr that it made one (a typo in --db is otherwise a second, silent
# queue); a read-only command still refuses a missing one and makes none.
. "$(dirname "$0")/lib.sh"

echo '{"title": "first goal"}' >"$T/goal.json"
run "$G" --db "$T/new/goald.db" submit "$T/goal.json"
expect_rc 0 "submit to a new database"
expect_err "goald: created a new database at $T/new/goald.db"
run "$G" --db "$T/new/goald.db" submit "$T/goal.json"
expect_rc 0 "submit again"
expect_eq "$ERR" "" "stderr once the database exists"

# read-only commands keep their error, and make nothing
run "$G" --db "$T/typo/goald.db" goals
expect_rc 1 "goals on a missing database"
expect_err "no database at $T/typo/goald.db"
case "$ERR" in *created*) fail "goals says it created a database: $ERR" ;; esac
[ ! -e "$T/typo/goald.db" ] || fail "goals made $T/typo/goald.db"

# the daemon too (its lock is the database file: it makes the file first)
run "$G" --db "$T/d/goald.db" daemon --once
expect_rc 0 "daemon --once on a new database"
expect_err "goald: created a new database at $T/d/goald.db"
run "$G" --db "$T/d/goald.db" daemon --once
expect_rc 0 "daemon --once again"
case "$ERR" in *created*) fail "daemon says it created an existing database: $ERR" ;; esac
