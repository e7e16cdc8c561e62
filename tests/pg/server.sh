#!/usr/bin/env bash
# pg.server: tests/pg/pg-server starts a real PostgreSQL server (Debian's
# postgresql package, as an unprivileged user, on a Unix socket in its
# folder; a loopback port with --port), the URI it prints works, a second
# start in the same folder is refused, restart keeps the data, and stop
# leaves no process behind.  Fails (does not skip) without postgresql.
set -euo pipefail
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
PGS="$GOALD_SOURCE_DIR/tests/pg/pg-server"
D=$(mktemp -d /tmp/goald-pgsrv.XXXXXX)
D2=$(mktemp -d /tmp/goald-pgsrv.XXXXXX)
finish() {
    "$PGS" stop "$D" 2>/dev/null || true
    "$PGS" stop "$D2" 2>/dev/null || true
    rm -rf "$D" "$D2"
    cleanup
}
trap finish EXIT

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$1" -c "$2"; }
# processes whose command line or working folder names the folder $1
procs_in() {
    local p
    for p in /proc/[0-9]*; do
        if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$1" ||
            [[ "$(readlink "$p/cwd" 2>/dev/null)" == "$1"* ]]; then
            echo "${p#/proc/}"
        fi
    done
}
# process $1 has ended (a zombie waiting for init to reap it counts as ended)
gone() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) || return 0; [[ "$st" == Z* ]]; }
none_in() { [ -z "$(procs_in "$1")" ]; }
wait_diag() { echo "still running in $D: $(procs_in "$D") $(procs_in "$D2")"; }

run "$PGS" start "$D"
expect_rc 0 "pg-server start"
URI=$OUT
[ "$URI" = "postgresql:///goald?host=$D&user=goald" ] || fail "start printed $URI"
ok
[ "$(stat -c %a "$D")" = 700 ] || fail "$D: mode $(stat -c %a "$D"), want 700"
[ "$(stat -c %U "$D/data")" != root ] || fail "the server's data belongs to root"
ok
[ "$(sql "$URI" 'SELECT 1')" = 1 ] || fail "SELECT 1 through $URI"
[ "$(sql "$URI" 'SELECT current_user || current_database()')" = goaldgoald ] ||
    fail "not connected as goald to goald"
[ "$(sql "$URI" 'SHOW listen_addresses')" = "" ] || fail "the server listens on TCP"
[ "$(sql "$URI" "SELECT setting FROM pg_settings WHERE name = 'max_connections'")" -ge 100 ] ||
    fail "max_connections below 100"
ok
# the server runs as the unprivileged user, never as root
owner=$(ps -o user= -p "$(head -n 1 "$D/data/postmaster.pid")")
[ "$owner" != root ] || fail "the postmaster runs as root"
ok

run "$PGS" start "$D"
expect_rc 1 "a second start in the same folder"
case "$ERR" in *"already runs"*) ok ;; *) fail "second start: $ERR" ;; esac

sql "$URI" "CREATE TABLE kept (v TEXT); INSERT INTO kept VALUES ('before restart')"
pid1=$(head -n 1 "$D/data/postmaster.pid")
run "$PGS" restart "$D"
expect_rc 0 "pg-server restart"
pid2=$(head -n 1 "$D/data/postmaster.pid")
[ "$pid1" != "$pid2" ] || fail "restart kept postmaster $pid1"
wait_until 10 gone "$pid1"
[ "$(sql "$URI" 'SELECT v FROM kept')" = "before restart" ] || fail "data lost over restart"
ok

# a loopback port on request
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run "$PGS" start "$D2" --port "$port"
expect_rc 0 "pg-server start --port"
[ "$OUT" = "postgresql:///goald?host=$D2&user=goald&port=$port" ] || fail "start --port printed $OUT"
[ "$(sql "$OUT" 'SELECT 2')" = 2 ] || fail "SELECT 2 through the socket with --port"
[ "$(sql "postgresql://goald@127.0.0.1:$port/goald" 'SELECT 3')" = 3 ] || fail "SELECT 3 over TCP"
ok

run "$PGS" stop "$D"
expect_rc 0 "pg-server stop"
run "$PGS" stop "$D2"
expect_rc 0 "pg-server stop (--port)"
wait_until 10 none_in "$D"
wait_until 10 none_in "$D2"
run "$PGS" status "$D"
expect_rc 1 "status after stop"
run psql -X -At "$URI" -c 'SELECT 1'
[ "$RC" != 0 ] || fail "psql still connects after stop"
ok
echo "pg.server: $TESTS_RUN checks passed"
