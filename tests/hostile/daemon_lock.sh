#!/usr/bin/env bash
# The host stays clean: one daemon per database, whatever path
# reaches it.  While a daemon runs on $T/db/goald.db, a second one through
# the same path, a symlink, a hard link and a bind mount of its folder is
# refused (exit 1, the message names the first daemon's pid) and never
# opens the database (no -wal beside the hard link's name).
. "$(dirname "$0")/../integration/lib.sh"

mkdir -p "$T/db"
DB="$T/db/goald.db"
"$G" --db "$DB" daemon --log-file "$T/d1.log" 2>"$T/d1.err" &
D1=$!
FAKE_PIDS="$FAKE_PIDS $D1"
started() { [ -n "$(sqlite3 "$DB" "SELECT pid FROM daemon_heartbeat" 2>/dev/null)" ]; }
for _ in $(seq 1 200); do started && break; sleep 0.05; done
started || fail "the first daemon did not start: $(cat "$T/d1.err")"
ok

second() { # second NAME PATH
    run "$G" --db "$2" daemon --once
    expect_rc 1 "$1: a second daemon"
    expect_err "a daemon is already running for $2 (pid $D1)"
}
second "same path" "$DB"
ln -s "$DB" "$T/symlink.db"
second symlink "$T/symlink.db"
ln -s "$T/db" "$T/dirlink"
second "symlinked folder" "$T/dirlink/goald.db"
ln "$DB" "$T/hardlink.db"
second "hard link" "$T/hardlink.db"
# (SQLite would have made a WAL of its own beside that name)
[ ! -e "$T/hardlink.db-wal" ] || fail "the second daemon opened the database through the hard link"
ok
mkdir -p "$T/bind"
if mount --bind "$T/db" "$T/bind" 2>"$T/mount.err"; then
    second "bind mount" "$T/bind/goald.db"
    umount "$T/bind"
else
    echo "skip: bind mount case: mount --bind failed: $(cat "$T/mount.err")"
fi
# the first daemon is unharmed, and once it is gone a daemon starts
kill -0 "$D1" || fail "the first daemon died"; ok
kill -TERM "$D1"
wait "$D1" || fail "the first daemon exited non-zero: $(cat "$T/d1.err")"
ok
run "$G" --db "$T/symlink.db" daemon --once
expect_rc 0 "a daemon through the symlink once the first is gone"
done_tests
