#!/usr/bin/env bash
# docs/examples/goald.service is hardened as far as bubblewrap allows:
#   - `systemd-analyze security` rates it 4.0 or better (9.2 unhardened);
#   - it sets none of the options that would stop bubblewrap (a covered
#     /proc, a namespace it makes refused), and docs/operations.md names
#     every hardening option the unit sets and each one left out;
#   - the sandbox runs as the unit leaves a job: an unprivileged user, no
#     capabilities in its bounding set, no_new_privs (as root, setpriv).
. "$(dirname "$0")/lib.sh"

UNIT="$GOALD_SOURCE_DIR/docs/examples/goald.service"
DOC="$GOALD_SOURCE_DIR/docs/operations.md"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed"

sed "s#/usr/local/bin/goald#$G#" "$UNIT" >"$T/goald.service"
run systemd-analyze security --offline=true "$T/goald.service"
level=$(printf '%s\n' "$OUT" | sed -n 's/.*Overall exposure level for goald.service: \([0-9.]*\).*/\1/p')
[ -n "$level" ] || fail "no exposure level in: $OUT $ERR"
awk -v l="$level" 'BEGIN { exit !(l <= 4.0) }' || fail "exposure $level, over 4.0: $OUT"; ok

# what would stop bubblewrap is not set
for opt in ProtectKernelTunables ProtectKernelLogs ProtectProc ProcSubset MemoryDenyWriteExecute \
           LockPersonality PrivateUsers PrivateNetwork; do
    if grep -q "^$opt=" "$UNIT"; then fail "the unit sets $opt (bubblewrap or the jobs need it off)"; fi
    grep -q "\`$opt=\`" "$DOC" || fail "docs/operations.md does not say why $opt is left out"
done
ok
ns=$(sed -n 's/^RestrictNamespaces=//p' "$UNIT")
for n in user mnt pid net ipc uts cgroup; do
    case " $ns " in *" $n "*) ok ;; *) fail "RestrictNamespaces=$ns refuses $n, which bubblewrap makes" ;; esac
done
grep -q '^RestrictAddressFamilies=.*AF_NETLINK' "$UNIT" || fail "bubblewrap's loopback needs AF_NETLINK"; ok
# every hardening directive of the unit is explained
hardening=$(sed -n '/^# Hardening/,/^\[Install\]/p' "$UNIT" | sed -n 's/^\([A-Za-z]*\)=.*/\1/p' | sort -u)
[ "$(printf '%s\n' "$hardening" | grep -c .)" -ge 15 ] || fail "too few hardening options: $hardening"; ok
for d in $hardening UMask; do
    grep -q "\`$d=" "$DOC" || fail "docs/operations.md does not explain $d"
done
ok

# the sandbox as the unit leaves the daemon: not root, no capabilities, no_new_privs
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    mkdir -p "$T/nobody"
    chmod 0755 "$T"
    chmod 0777 "$T/nobody"
    run env HOME="$T/nobody" XDG_STATE_HOME="$T/nobody" setpriv --reuid=65534 --regid=65534 --clear-groups \
        --no-new-privs --bounding-set=-all --inh-caps=-all "$G" --db "$T/nobody/goald.db" doctor --json
    expect_eq "$(jqo '[.checks[] | select(.name=="sandbox")][0].status')" ok \
        "the sandbox under no_new_privs, without capabilities ($OUT)"
else
    echo "skipped: the sandbox as an unprivileged user (needs root and setpriv)"
fi
done_tests
