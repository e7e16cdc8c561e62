#!/usr/bin/env bash
# docs/operations.md's systemd recipe works as written.
# The shell blocks marked `<!-- recipe -->` are taken from the document and
# run in order, as root, in a throw-away prefix ($P stands for /): the user
# (a unique name stands for `goald`), the folders and their modes, the
# config file the recipe writes, the repository given to the service user.
# There is no systemd here (no PID 1): `systemctl` lines are left out and
# the unit's ExecStart line (docs/examples/goald.service, as the recipe
# copied it) runs as the unit's User with its Environment= and
# EnvironmentFile=, through setpriv. The daemon must read the config and
# complete a goal against a fake OpenAI-compatible server. Then: a
# repository the service user does not own is refused at submit with an
# error naming its owner and safe.directory.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
    echo "skipped: needs root, useradd and setpriv (the recipe creates a system user)"
    exit 0
fi

U="goaldt$$"
P="$T/prefix"
W="$T/cwd"
chmod 0755 "$T"
mkdir -p "$P" "$W/build" "$W/docs"
chmod 0755 "$P" "$W"
DPID=""
recipe_cleanup() {
    set +e
    [ -z "$DPID" ] || { kill -KILL "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
    userdel "$U" >/dev/null 2>&1 || true
    getent group "$U" >/dev/null && groupdel "$U" >/dev/null 2>&1
    cleanup
    true
}
trap recipe_cleanup EXIT

# the recipe runs from the source folder with build/goald built
ln -s "$GOALD_BIN" "$W/build/goald"
ln -s "$GOALD_SOURCE_DIR/docs/examples" "$W/docs/examples"

# --- the blocks, as the document has them ---------------------------------------
DOC="$GOALD_SOURCE_DIR/docs/operations.md"
awk '/^<!-- recipe -->$/ { want = 1; next }
     want && /^```/ { if (inblock) { inblock = 0; want = 0; print "#--end--" } else inblock = 1; next }
     inblock { print }' "$DOC" >"$T/recipe.sh"
nblocks=$(grep -c '^#--end--$' "$T/recipe.sh" || true)
[ "$nblocks" -ge 5 ] || fail "docs/operations.md: expected the recipe's shell blocks marked <!-- recipe -->, found $nblocks"; ok
grep -q '^useradd ' "$T/recipe.sh" || fail "the recipe does not create the user"; ok
grep -q 'config.json' "$T/recipe.sh" || fail "the recipe does not write the config"; ok

start_fake_llm llm openai "$GOALD_SOURCE_DIR/tests/fixtures/fake/demo.jsonl"

# $P for /, $U for the user goald, the fake for the model's URL
subst() {
    sed -e "s#/usr/local/bin/goald#$P/usr/local/bin/goald#g" \
        -e "s#/etc/goald#$P/etc/goald#g" \
        -e "s#/var/lib/goald#$P/var/lib/goald#g" \
        -e "s#/var/log/goald#$P/var/log/goald#g" \
        -e "s#/var/lib\$#$P/var/lib#" \
        -e "s#/etc/systemd/system#$P/etc/systemd/system#g" \
        -e "s#/srv/repos#$P/srv/repos#g" \
        -e "s#http://127.0.0.1:11434/v1#$FAKE_URL#g" \
        -e "s#-u goald #-u $U #g; s#-o goald #-o $U #g; s#-g goald #-g $U #g" \
        -e "s#goald:goald#$U:$U#g; s#root:goald#root:$U#g; s# goald\$# $U#" \
        -e "s#^User=goald\$#User=$U#; s#^Group=goald\$#Group=$U#" \
        -e "s#-- goald #-- $P/usr/local/bin/goald #g"
}
subst <"$T/recipe.sh" | sed -e 's/^systemctl .*/true  # systemctl: no systemd here; the unit is started below/' >"$T/recipe.run"
grep -q "$U" "$T/recipe.run" || fail "the user name was not found in the recipe"; ok

# what the reader already has: folders, a repository (owned by root, as
# a checkout usually is, until the recipe gives it away) and a goal
mkdir -p "$P/usr/local/bin" "$P/etc/systemd/system" "$P/srv/repos" "$P/var/lib" "$P/var/log"
chmod 0755 "$P/usr" "$P/usr/local" "$P/usr/local/bin" "$P/etc" "$P/srv" "$P/srv/repos" "$P/var" "$P/var/lib" "$P/var/log"
make_repo "$P/srv/repos/project"
cp "$GOALD_SOURCE_DIR/share/demo-project/add.sh" "$GOALD_SOURCE_DIR/share/demo-project/test.sh" "$P/srv/repos/project/"
git -C "$P/srv/repos/project" add add.sh test.sh
git -C "$P/srv/repos/project" commit -q -m "add.sh and its test"
jq -n --arg repo "$P/srv/repos/project" '{title: "Fix the addition in add.sh", repo: $repo,
    base_branch: "main", success_criteria: ["sh test.sh exits 0"],
    verification: [{name: "tests", type: "test", command: "sh test.sh", must_pass: true}]}' >"$W/goal.json"
chmod 0644 "$W/goal.json"

# split the blocks: all but the last run before the service starts
awk -v out="$T/block" 'BEGIN { n = 1 } /^#--end--$/ { n++; next } { print > (out n ".sh") }' "$T/recipe.run"
last=$nblocks
for i in $(seq 1 $((last - 1))); do
    (cd "$W" && bash -euo pipefail "$T/block$i.sh") >"$T/block$i.out" 2>&1 ||
        fail "recipe block $i failed: $(cat "$T/block$i.sh") -> $(cat "$T/block$i.out")"
    ok
done

# the folders and the config as the service user sees them
expect_eq "$(stat -c '%a %U %G' "$P/etc/goald")" "750 root $U" "/etc/goald"
expect_eq "$(stat -c '%a %U %G' "$P/etc/goald/config.json")" "640 root $U" "/etc/goald/config.json"
expect_eq "$(stat -c '%a %U' "$P/etc/goald/env")" "600 root" "/etc/goald/env"
run setpriv --reuid="$U" --regid="$U" --init-groups env HOME="$P/var/lib/goald" \
    GOALD_CONFIG="$P/etc/goald/config.json" "$P/usr/local/bin/goald" config show
expect_rc 0 "the service user reads the config"
expect_out "$FAKE_URL"

# --- the unit, as systemd would start it ------------------------------------------
UNIT="$P/etc/systemd/system/goald.service"
[ -f "$UNIT" ] || fail "the recipe did not install the unit"; ok
subst <"$UNIT" >"$T/unit"
unit_user=$(sed -n 's/^User=//p' "$T/unit")
expect_eq "$unit_user" "$U" "the unit's User"
envs=()
while IFS= read -r e; do envs+=("$e"); done < <(sed -n 's/^Environment=//p' "$T/unit")
envfile=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$T/unit")
if [ -n "$envfile" ] && [ -f "$envfile" ]; then
    while IFS= read -r e; do case "$e" in ''|'#'*) ;; *) envs+=("$e") ;; esac; done <"$envfile"
fi
exec_start=$(sed -n 's/^ExecStart=//p' "$T/unit")
for d in $(sed -n 's/^StateDirectory=//p; s/^LogsDirectory=//p' "$T/unit"); do
    :   # systemd makes /var/lib/$d and /var/log/$d owned by User=; the recipe made them
done
[ -d "$P/var/lib/goald" ] && [ "$(stat -c %U "$P/var/lib/goald")" = "$U" ] || fail "state folder"; ok
read -r -a argv <<<"$exec_start"
(cd / && exec setpriv --reuid="$U" --regid="$U" --init-groups env -i PATH=/usr/local/bin:/usr/bin:/bin \
    HOME="$P/var/lib/goald" ${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
    ${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} LSAN_OPTIONS="$LSAN_OPTIONS" \
    GOALD_DAEMON_TICK_MS=100 "${envs[@]}" "${argv[@]}") 2>"$T/daemon.err" &
DPID=$!
# systemctl enable --now returns when the service has started; here: its
# first log line (a fresh database opened by two processes at once can be
# refused as locked)
for _ in $(seq 1 200); do grep -q daemon.started "$P/var/log/goald/goald.log" 2>/dev/null && break; sleep 0.05; done
grep -q daemon.started "$P/var/log/goald/goald.log" || fail "the service did not start: $(cat "$T/daemon.err")"
ok

# --- the last block: submit and status, as the service user -------------------------
(cd "$W" && bash -euo pipefail "$T/block$last.sh") >"$T/block$last.out" 2>&1 ||
    fail "recipe block $last failed: $(cat "$T/block$last.sh") -> $(cat "$T/block$last.out")"
ok
DB="$P/var/lib/goald/goald.db"
GID=$(grep -Eo '^[0-9a-f-]{36}$' "$T/block$last.out" | head -n1)
[ -n "$GID" ] || fail "no goal id from submit: $(cat "$T/block$last.out")"; ok
ug() { setpriv --reuid="$U" --regid="$U" --init-groups env HOME="$P/var/lib/goald" "$P/usr/local/bin/goald" --db "$DB" "$@"; }
done_or_dead() {
    kill -0 "$DPID" 2>/dev/null || fail "the daemon exited: $(cat "$T/daemon.err")"
    [ "$(ug goal show "$GID" --json | jq -r .status)" = completed ]
}
for _ in $(seq 1 1200); do done_or_dead && break; sleep 0.1; done
[ "$(ug goal show "$GID" --json | jq -r .status)" = completed ] ||
    fail "the goal did not complete: $(ug report "$GID") / $(tail -5 "$T/daemon.err")"
ok
BR=$(ug goal show "$GID" --json | jq -r .branch)
expect_eq "$(setpriv --reuid="$U" --regid="$U" --init-groups env HOME="$P/var/lib/goald" git -C "$P/srv/repos/project" log -1 --format='%(trailers:key=Goal-Id,valueonly)' "$BR" | tr -d '\n')" "$GID" \
    "the goal's commit on its branch"
[ -s "$P/var/log/goald/goald.log" ] || fail "the service's log file is empty"; ok
expect_eq "$(find "$P/var/lib/goald" "$P/srv/repos/project" ! -user "$U" | head -n3)" "" "files the service made that its user does not own"
kill -TERM "$DPID"
wait "$DPID"
expect_eq "$?" 0 "the daemon's exit on SIGTERM"
DPID=""

# --- a repository the service user does not own ----------------------------------------
make_repo "$P/srv/repos/other"
jq -n --arg repo "$P/srv/repos/other" '{title: "t", repo: $repo}' >"$W/other.json"
chmod 0644 "$W/other.json"
run ug submit "$W/other.json"
expect_rc 2 "submit of a repository owned by root, as the service user"
expect_err "other.json: repo: $P/srv/repos/other is owned by uid 0, not by the user running goald (uid $(id -u "$U"), $U)"
expect_err "safe.directory"
chmod 0700 "$P/srv/repos/other"
run ug submit "$W/other.json"
expect_rc 2 "submit of an unreadable repository"
expect_err "other: the user running goald (uid $(id -u "$U"), $U) cannot read it"

done_tests
