#!/usr/bin/env bash
# The host stays clean: a full disk or database makes
# `goald daemon --once` exit non-zero with a message naming the cause
# ("database or disk is full: PATH") - never loop, never exit 0 as if all
# were done.  The database lives on a small tmpfs:
# 1. full before the daemon starts;
# 2. filled while a job runs (the model's unconfined command fills it), so
#    that the job's writes fail with ENOSPC.
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

MNT="$T/small"
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=3m tmpfs "$MNT" 2>"$T/mount.err"; then
    echo "skip: cannot mount a tmpfs: $(cat "$T/mount.err")"
    exit 0
fi
cleanup_mount() { umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true; cleanup; }
trap cleanup_mount EXIT
fill() { for i in $(seq 1 400); do head -c 65536 /dev/zero >"$MNT/fill$i" 2>/dev/null || break; done; }

# --- 1. full before the start ------------------------------------------------
export GOALD_DB="$MNT/one.db"
make_project "$T/repo1"
goal_json "$T/repo1" "one" >"$T/goal1.json"
submit_goal "$T/goal1.json"
fill
GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT=/dev/null run timeout 60 "$G" daemon --once
[ "$RC" != 0 ] && [ "$RC" != 124 ] || fail "daemon --once on a full disk: exit $RC (124: it hung); stderr: $ERR"
ok
expect_err "database or disk is full: $GOALD_DB"
rm -f "$MNT"/fill* "$MNT"/one.db*

# --- 2. filled while a job runs ----------------------------------------------
export GOALD_DB="$MNT/two.db"
make_project "$T/repo2"
{
    echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["ok"],"allowed_actions":["bash"],"verification":[]}}'
    echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"fill","description":"","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]}]}}'
    echo "{\"stage\":\"execute\",\"tool_calls\":[{\"name\":\"bash\",\"arguments\":{\"command\":\"for i in \$(seq 1 400); do head -c 65536 /dev/zero >$MNT/fill\$i || break; done; df -k $MNT | tail -1\"}}]}"
    for _ in 1 2 3 4 5 6; do
        echo '{"stage":"execute","tool_calls":[{"name":"bash","arguments":{"command":"echo more >>work.log"}}]}'
    done
    echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"done"}}]}'
    echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
} >"$T/script2.jsonl"
goal_json "$T/repo2" "two" >"$T/goal2.json"
submit_goal "$T/goal2.json"
GOALD_SANDBOX=none GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$T/script2.jsonl" \
    run timeout 120 "$G" daemon --once
[ "$RC" != 0 ] && [ "$RC" != 124 ] || fail "daemon --once filled during a job: exit $RC (124: it hung); stderr: $ERR"
ok
expect_err "database or disk is full: $GOALD_DB"
# it was the job's writes that failed first (its run could not be finished)
[ -z "$(ls "$MNT"/fill* 2>/dev/null)" ] && fail "the model's command did not fill the disk"
ok
done_tests
