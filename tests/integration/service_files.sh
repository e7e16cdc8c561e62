#!/usr/bin/env bash
# The files docs/ ships for running goald as a service work.
#   - docs/examples/goald.service passes `systemd-analyze verify` without a
#     warning, and its ExecStart is a command line goald accepts;
#   - docs/examples/logrotate-goald, run by the real logrotate against a
#     running daemon: rotates past 10 MB (not before), compresses the
#     older files, keeps at most 50, and its SIGUSR1 makes the daemon write
#     to the new file without losing a line.
# Only the paths, the owner of `create` and the signal's target are changed
# for the test; every other directive is the shipped one.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

SRC="$GOALD_SOURCE_DIR/docs/examples"
command -v logrotate >/dev/null || fail "logrotate is not installed (scripts/install-deps installs it)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed"

# --- the systemd unit -------------------------------------------------------------
sed "s#/usr/local/bin/goald#$G#" "$SRC/goald.service" >"$T/goald.service"
run systemd-analyze verify "$T/goald.service"
expect_rc 0 "systemd-analyze verify"
expect_eq "$ERR" "" "systemd-analyze warnings"
exec_start=$(sed -n 's/^ExecStart=//p' "$SRC/goald.service")
case "$exec_start" in /usr/local/bin/goald\ daemon\ *) ok ;; *) fail "ExecStart: $exec_start" ;; esac
# the same command line, with a test log path and --once, runs
args=$(printf '%s' "${exec_start#/usr/local/bin/goald }" | sed "s#/var/log/goald/goald.log#$T/unit.log#")
# shellcheck disable=SC2086
run "$G" $args --once
expect_rc 0 "ExecStart's command line"
grep -q '"event":"daemon.started"' "$T/unit.log" || fail "no JSON line in the unit's log file"; ok
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$SRC/goald.service" || fail "ExecReload is not SIGHUP"; ok

# --- logrotate -----------------------------------------------------------------------
mkdir -p "$T/log"
LOG="$T/log/goald.log"
"$G" daemon --log-file "$LOG" 2>"$T/d.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
started() { grep -q '"event":"daemon.started"' "$LOG" 2>/dev/null; }
wait_until 10 started
sed -e "s#/var/log/goald/goald.log#$LOG#" \
    -e "s#create 0640 goald goald#create 0640#" \
    -e "s#systemctl kill --signal=SIGUSR1 --kill-who=main goald.service#kill -USR1 $DPID#" \
    "$SRC/logrotate-goald" >"$T/logrotate.conf"
expect_eq "$(diff "$SRC/logrotate-goald" "$T/logrotate.conf" | grep -c '^>')" 3 "lines changed for the test"
lr() { logrotate -s "$T/lr.state" "$T/logrotate.conf" 2>>"$T/lr.err" || fail "logrotate: $(cat "$T/lr.err")"; }
# a line of the daemon's own, written after a SIGHUP (config.reloaded)
mark() {
    local n
    n=$(grep -c '"event":"config.reloaded"' "$1" 2>/dev/null || true)
    kill -HUP "$DPID"
    marked() { [ "$(grep -c '"event":"config.reloaded"' "$1" 2>/dev/null || true)" -gt "$n" ]; }
    wait_until 10 marked "$1"
}
filler() { head -c "$1" /dev/zero | tr '\0' 'x' | fold -w 99 >>"$LOG"; }

# under 10 MB and rotated less than a day ago: left alone
lr # the first run records the file in the state
filler $((9 * 1024 * 1024))
lr
[ ! -e "$LOG.1" ] || fail "rotated a 9 MB log"; ok

# past 10 MB: rotated at once (not waiting for the day), the daemon reopens
filler $((2 * 1024 * 1024))
lines_before=$(wc -l <"$LOG")
lr
[ -s "$LOG.1" ] || fail "no $LOG.1 after an 11 MB log"; ok
expect_eq "$(wc -l <"$LOG.1")" "$lines_before" "every line in the rotated file"
mark "$LOG"
grep -q '"event":"config.reloaded"' "$LOG.1" && fail "the daemon still writes to the rotated file"
ok
grep -c . "$LOG" >/dev/null || fail "the new log is empty"; ok
jq -e . "$LOG" >/dev/null || fail "the new log is not JSON lines: $(head -3 "$LOG")"; ok

# the next rotation compresses the previous file (delaycompress)
filler $((11 * 1024 * 1024))
lr
[ -s "$LOG.2.gz" ] || fail "no compressed $LOG.2.gz: $(ls "$T/log")"; ok
gzip -t "$LOG.2.gz" || fail "$LOG.2.gz is not gzip"; ok
zcat "$LOG.2.gz" | grep -q '"event":"daemon.started"' || fail "the first file's lines are not in $LOG.2.gz"; ok
[ -s "$LOG.1" ] && [ ! -e "$LOG.1.gz" ] || fail "the newest rotated file should stay uncompressed"; ok
mark "$LOG"

# at most 50 files are kept (50 x 10 MB = 500 MB): rotate 55 more times
for i in $(seq 1 55); do
    echo "{\"filler\": $i}" >>"$LOG"
    logrotate -f -s "$T/lr.state" "$T/logrotate.conf" 2>>"$T/lr.err" || fail "logrotate -f: $(cat "$T/lr.err")"
done
expect_eq "$(find "$T/log" -name 'goald.log.*' | wc -l)" 50 "rotated files kept"
[ -e "$LOG.50.gz" ] && [ ! -e "$LOG.51.gz" ] || fail "kept: $(ls "$T/log" | sort -V | tail -3)"; ok
# and the daemon still writes to the current file
mark "$LOG"
kill -0 "$DPID" || fail "the daemon died"; ok
done_tests
