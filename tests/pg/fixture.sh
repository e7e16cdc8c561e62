#!/usr/bin/env bash
# fixture.sh start|stop - the ctest fixture `pg` (tests pg.start and pg.stop).
# start: a fresh server (tests/pg/pg-server) in a new /tmp folder (short
# enough for the socket path, reachable by the server's user wherever the
# build folder is), its folder written to $GOALD_BUILD_DIR/pg/dir and its
# URI to $GOALD_BUILD_DIR/pg/uri.  A server left by an interrupted run is
# stopped first.  stop: stops it and removes the folder and both files.
# Tests with FIXTURES_REQUIRED pg read the URI from that file.
set -euo pipefail
: "${GOALD_BUILD_DIR:?}" "${GOALD_SOURCE_DIR:?}"
PGS="$GOALD_SOURCE_DIR/tests/pg/pg-server"
STATE="$GOALD_BUILD_DIR/pg"

stop_old() {
    local dir
    dir=$(cat "$STATE/dir" 2>/dev/null) || return 0
    case "$dir" in /tmp/goald-pg.*) ;; *) echo "fixture: $STATE/dir names $dir: left alone" >&2; return 0 ;; esac
    if [ -d "$dir" ]; then
        "$PGS" stop "$dir"
        rm -rf "$dir"
    fi
    rm -f "$STATE/dir" "$STATE/uri"
}

case "${1:-}" in
    start)
        mkdir -p "$STATE"
        stop_old
        dir=$(mktemp -d /tmp/goald-pg.XXXXXX)
        echo "$dir" >"$STATE/dir"
        uri=$("$PGS" start "$dir")
        echo "$uri" >"$STATE/uri"
        echo "pg fixture: $uri"
        ;;
    stop) stop_old ;;
    *) echo "usage: fixture.sh start|stop" >&2; exit 2 ;;
esac
