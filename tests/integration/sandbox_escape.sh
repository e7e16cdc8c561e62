#!/usr/bin/env bash
# Escapes from the bash tool (goald tool bash): each attempt must fail, be
# reported in the envelope, and leave the host untouched.
. "$(dirname "$0")/lib.sh"

W="$T/wt"
make_repo "$W"

# bash_tool COMMAND [TIMEOUT_S]: runs the bash tool in $W; $OUT is the envelope.
bash_tool() {
    run "$G" tool bash --root "$W" --args "$(jq -cn --arg c "$1" --argjson t "${2:-30}" \
        '{command: $c, timeout_s: $t}')"
    expect_rc 0 "goald tool bash"
    json_ok
}
out() { jqo .output; }

# --- the sandbox works at all -------------------------------------------------
bash_tool 'echo hello; pwd'
expect_eq "$(jqo .ok)" true
expect_eq "$(out)" "hello
$W"

# --- $HOME is empty and private -------------------------------------------------
bash_tool 'echo "$HOME"; ls -A "$HOME" | wc -l; echo pwned > "$HOME/x" && echo wrote; ls ~/'
expect_eq "$(out)" "/tmp/home
0
wrote
x"
expect_eq "$(ls -A "$HOME" | wc -l)" 0 "host HOME entries"

# --- files outside the worktree that are not system folders are invisible -------
echo "host secret" >"$T/secret.txt"
bash_tool "cat '$T/secret.txt'"
expect_eq "$(jqo .ok)" false
expect_eq "$(jqo .error_class)" exit
case "$(out)" in *"No such file or directory"*) ok ;; *) fail "outside file readable: $(out)" ;; esac
bash_tool 'ls /root 2>&1; ls /work 2>&1; ls /home 2>&1 | wc -l'
case "$(out)" in *"host secret"*) fail "leak" ;; esac
case "$(out)" in *"/root': No such file"*) ok ;; *) fail "/root visible: $(out)" ;; esac
# secrets of /etc are masked
# (masked by /dev/null on a nodev mount: opening them is refused)
if grep -q '^root:' /etc/shadow; then
    bash_tool 'cat /etc/shadow /etc/gshadow'
    case "$(out)" in *"root:"*) fail "/etc/shadow readable: $(out)" ;; esac
    case "$(out)" in *"/etc/shadow: Permission denied"*"/etc/gshadow: Permission denied"*) ok ;;
        *) fail "/etc/shadow not masked: $(out)" ;; esac
fi
for k in /etc/ssh/ssh_host_*; do
    [ -f "$k" ] || continue
    bash_tool "cat '$k' | wc -c"
    expect_eq "$(out | tail -1)" 0 "$k in the sandbox"
done

# --- system folders are read-only, even for root inside -------------------------
bash_tool 'touch /usr/pwned; touch /etc/pwned; touch /pwned; mkdir /newdir; mount -o remount,rw /usr; grep CapEff /proc/self/status'
expect_eq "$(jqo .ok)" true
[ ! -e /usr/pwned ] && [ ! -e /etc/pwned ] && [ ! -e /pwned ] || fail "a system folder was written"
ok
case "$(out)" in *"Read-only file system"*) ok ;; *) fail "no read-only error: $(out)" ;; esac
case "$(out)" in *"CapEff:	0000000000000000"*) ok ;; *) fail "capabilities left: $(out)" ;; esac

# --- .git inside the worktree is read-only --------------------------------------
head_before=$(git -C "$W" rev-parse HEAD)
bash_tool 'echo x > .git/evil; git config user.name hacker; git commit -q --allow-empty -m evil; echo done'
[ ! -e "$W/.git/evil" ] || fail ".git/evil was written"
ok
expect_eq "$(git -C "$W" config user.name)" test ".git/config"
expect_eq "$(git -C "$W" rev-parse HEAD)" "$head_before" "HEAD"
bash_tool 'git log --oneline | wc -l' # reading .git works
expect_eq "$(out)" 1
# a linked worktree (.git is a file): its git folders are readable, not writable
git -C "$W" worktree add -q "$T/linked" -b linked
run "$G" tool bash --root "$T/linked" --args '{"command":"git log --oneline | wc -l; echo x > y; git add y && echo added; git branch evil && echo branched"}'
case "$(jqo .output)" in
    "1"*"index.lock': Read-only file system"*"refs/heads/evil.lock': Read-only file system"*) ok ;;
    *) fail "linked worktree: $(jqo .output)" ;;
esac
case "$(jqo .output)" in *added*|*branched*) fail "git wrote from the sandbox" ;; esac
expect_eq "$(git -C "$W" branch --list evil)" "" "branch made from the sandbox"
expect_eq "$(git -C "$T/linked" status --short)" "?? y"

# --- no network: a listener on the host's 127.0.0.1 is unreachable --------------
python3 - "$T/port" "$T/accepted" <<'EOF' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(5)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.settimeout(30)
n = 0
try:
    while True:
        c, _ = s.accept()
        n += 1
        open(sys.argv[2], "w").write(str(n))
        c.close()
except Exception:
    pass
EOF
LISTENER=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
# the listener works from the host
bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" || fail "host cannot reach its own listener"
for _ in $(seq 100); do [ -s "$T/accepted" ] && break; sleep 0.05; done
expect_eq "$(cat "$T/accepted")" 1 "connections from the host"
bash_tool "exec 3<>/dev/tcp/127.0.0.1/$PORT && echo CONNECTED; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"
case "$(out)" in *CONNECTED*) fail "connected from the sandbox: $(out)" ;; esac
case "$(out)" in *"Connection refused"*) ok ;; *) fail "expected a refused connection: $(out)" ;; esac
expect_eq "$(out | tail -1)" lo "network interfaces"
sleep 0.3
expect_eq "$(cat "$T/accepted")" 1 "connections after the sandbox tried"
kill "$LISTENER" 2>/dev/null || true
wait "$LISTENER" 2>/dev/null || true

# --- filling the disk is capped ------------------------------------------------
GOALD_SANDBOX_RLIMIT_FSIZE_MB=5 bash_tool 'dd if=/dev/zero of=big bs=1M count=50 2>&1 | tail -1; ls -l big | cut -d" " -f5'
size=$(stat -c %s "$W/big")
[ "$size" -le $((5 << 20)) ] || fail "big is $size bytes, over RLIMIT_FSIZE"
ok
rm -f "$W/big"
GOALD_SANDBOX_TMP_MB=4 bash_tool 'dd if=/dev/zero of=/tmp/big bs=1M count=50; df -k /tmp | tail -1'
case "$(out)" in *"No space left on device"*) ok ;; *) fail "/tmp not capped: $(out)" ;; esac
case "$(out)" in *" 4096 "*) ok ;; *) fail "/tmp is not 4 MiB: $(out)" ;; esac
bash_tool 'dd if=/dev/zero of=/big bs=1M count=1'
case "$(out)" in *"Read-only file system"*) ok ;; *) fail "/ writable: $(out)" ;; esac

# --- memory: all processes of a command together are capped (memory cgroup) ---
GOALD_SANDBOX_MEMORY_MB=64 GOALD_SANDBOX_RLIMIT_AS_MB=0 bash_tool 'python3 -c "
x = []
for i in range(100):
    x.append(bytearray(10 << 20))
print(\"allocated 1000 MB\")"'
if [ "$(jqo .meta.memory_cgroup)" = true ]; then
    expect_eq "$(jqo .exit_code)" 137 "the memory hog's exit"
    case "$(out)" in *"allocated 1000 MB"*) fail "allocated past the memory cgroup" ;; esac
    ok
else
    echo "SKIP memory cgroup: none could be made here" >&2
fi
# and per process, RLIMIT_AS without any cgroup
GOALD_SANDBOX_CGROUP=false GOALD_SANDBOX_RLIMIT_AS_MB=256 bash_tool 'python3 -c "bytearray(1 << 30)" 2>&1 | tail -1'
expect_eq "$(out)" "MemoryError"

# --- the timeout kills the whole group: no orphan survives ----------------------
MARK="goald-orphan-$$-$RANDOM"
start=$(date +%s)
bash_tool "(setsid bash -c 'echo \$\$ > gc.pid; exec -a $MARK sleep 1000' &); sleep 1000" 2
end=$(date +%s)
expect_eq "$(jqo .error_class)" timeout
expect_eq "$(jqo .meta.timed_out)" true
case "$(out)" in *"Command timed out after 2 seconds"*) ok ;; *) fail "notice: $(out)" ;; esac
[ -s "$W/gc.pid" ] || fail "the grandchild did not start"
ok
[ $((end - start)) -le 8 ] || fail "the timeout took $((end - start)) s"
ok
no_orphan() { ! pgrep -f "$MARK" >/dev/null; }
wait_until 5 no_orphan
ok

# --- a fork bomb is contained ------------------------------------------------------
bash_tool 'true'
if [ "$(jqo .meta.pids_cgroup)" != true ] && [ "$(id -u)" = 0 ]; then
    # RLIMIT_NPROC does not bind root: without a pids cgroup the bomb would
    # reach the host's pid limit, so it is not started
    echo "SKIP fork bomb: running as root without a pids cgroup" >&2
else
    GOALD_SANDBOX_RLIMIT_NPROC=64 "$G" tool bash --root "$W" \
        --args '{"command":"bomb() { bomb | bomb & }; bomb; sleep 3; echo survived","timeout_s":6}' \
        >"$T/bomb.json" 2>&1 &
    BOMB=$!
    sleep 2
    # the host forks as usual meanwhile
    t0=$(date +%s%N)
    for _ in $(seq 20); do /bin/true || fail "host cannot fork"; done
    t1=$(date +%s%N)
    [ $(((t1 - t0) / 1000000)) -lt 2000 ] || fail "host slow during the bomb: $(((t1 - t0) / 1000000)) ms"
    ok
    wait "$BOMB" || fail "goald tool failed during the bomb"
    OUT=$(cat "$T/bomb.json")
    json_ok
    case "$(out)" in *"Resource temporarily unavailable"*) ok ;; *) fail "fork never failed: $(out | tail -3)" ;; esac
    no_bomb() { ! pgrep -f 'bomb \| bomb' >/dev/null; }
    wait_until 1 no_bomb
    ok
fi

# --- a clean environment ------------------------------------------------------------
export GOALD_TEST_SECRET=xyz MY_TOOL_VAR=abc
bash_tool 'echo "[$GOALD_TEST_SECRET][$MY_TOOL_VAR][$PATH][$LANG]"'
expect_eq "$(out)" "[][][/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin][${LANG:-C.UTF-8}]"
GOALD_SANDBOX_ENV='["MY_TOOL_VAR"]' bash_tool 'echo "[$GOALD_TEST_SECRET][$MY_TOOL_VAR]"'
expect_eq "$(out)" "[][abc]"

# --- extra read-only binds for toolchains ------------------------------------------
mkdir -p "$T/toolchain/bin"
printf '#!/bin/sh\necho toolchain ok\n' >"$T/toolchain/bin/tc"
chmod +x "$T/toolchain/bin/tc"
GOALD_SANDBOX_BINDS="[\"$T/toolchain\"]" GOALD_SANDBOX_PATH="$T/toolchain/bin:/usr/bin:/bin" \
    bash_tool 'tc; touch "$(dirname "$(command -v tc)")/x" 2>&1 | grep -c "Read-only"'
expect_eq "$(out)" "toolchain ok
1"
GOALD_SANDBOX_BINDS='["relative/path"]' bash_tool 'true'
expect_eq "$(jqo .error_class)" validation

# --- without bubblewrap: refused, with the install command ---------------------------
GOALD_SANDBOX_BWRAP=/nonexistent/bwrap bash_tool 'echo should not run'
expect_eq "$(jqo .ok)" false
expect_eq "$(jqo .error_class)" policy
case "$(out)" in *"apt-get install bubblewrap"*) ok ;; *) fail "no install hint: $(out)" ;; esac
case "$(out)" in *"should not run"*) fail "ran without bubblewrap" ;; esac
GOALD_SANDBOX=bogus bash_tool 'true'
expect_eq "$(jqo .error_class)" validation

# --- GOALD_SANDBOX=none: explicit, logged for every command ----------------------------
GOALD_SANDBOX=none bash_tool 'echo unconfined'
expect_eq "$(jqo .ok)" true
expect_eq "$(jqo .meta.unconfined)" true
case "$ERR" in *"GOALD_SANDBOX=none"*) ok ;; *) fail "no warning on stderr: $ERR" ;; esac
GOALD_SANDBOX=none bash_tool 'echo again'
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'sandbox.unconfined'")" 2
expect_eq "$(sql "SELECT json_extract(payload, '\$.command') FROM events WHERE type = 'sandbox.unconfined' ORDER BY id DESC LIMIT 1")" "echo again"

done_tests
