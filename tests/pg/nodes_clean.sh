#!/usr/bin/env bash
# Two nodes leave no worktree of an ended goal behind (docs/scaling.md,
# "Worktrees of ended goals").  Nodes A and B (their own id, state folder,
# clones and worktree root) share one PostgreSQL queue; goals on bare
# repositories (clone mode), run partly on each node by hand (`claim`,
# `job`):
#   goal 1: item 1 on A, items 2 and 3 and the publish on B (completed);
#   goal 2: item 1 on A, item 2 on B, then cancelled from a third node;
#   goal 3: item 1 on A fails, its retry ten minutes away (open).
# A model's leftovers in goal 2's worktrees: a link out of them, a .git
# naming another repository.
#   1. the daemons of A and B start (a sweep a second): the worktrees of
#      goals 1 and 2 go from both nodes, folder and registration (`git
#      worktree list` of every clone shows none), without following the
#      link or the .git; goal 3's stays through several sweeps.
#   2. the daemons again, with the default sweep (15 min): goal 3
#      cancelled from the third node goes from A at once (the next tick).
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"
[ -n "${GOALD_TEST_PG:-}" ] || fail "GOALD_TEST_PG is not set (the pg fixture)"

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_LLM_RETRY_MAX=0 GOALD_CONTROL_BACKOFF_BASE_MS=600000 \
    GOALD_CONTROL_BACKOFF_MAX_MS=600000 GOALD_DAEMON_TICK_MS=100
# goals of 3 items; the 6th execute call (goal 3's first) fails
script_generic 4 0 3 | awk '/"stage":"execute"/ && ++n == 6 {
    print "{\"stage\":\"execute\",\"error\":\"provider_api\",\"message\":\"a scripted outage\"}"; next }
    { print }' >"$GOALD_LLM_SCRIPT"

node() { # NAME CMD...: CMD as node NAME (its id, folder and worktree root)
    local n=$1
    shift
    mkdir -p "$T/$n"
    GOALD_NODE_ID=$n GOALD_NODE_STATE_DIR="$T/$n" GOALD_VCS_WORKTREE_ROOT="$T/$n/wt" "$@"
}
start_node() { # NAME [VAR=VALUE...]: its daemon, pid in PID_NAME
    local n=$1
    shift
    mkdir -p "$T/$n"
    GOALD_NODE_ID=$n GOALD_NODE_STATE_DIR="$T/$n" GOALD_VCS_WORKTREE_ROOT="$T/$n/wt" \
        env "$@" "$G" daemon --log-file "$T/$n.log" 2>>"$T/$n.err" &
    eval "PID_$n=$!"
    FAKE_PIDS="$FAKE_PIDS $!"
    wait_until 30 node_beats "$n"
}
stop_node() { # NAME
    local p
    p=$(eval echo "\$PID_$1")
    kill -TERM "$p"
    wait "$p" 2>/dev/null || true
}
node_beats() { [ "$(sql "SELECT count(*) FROM daemon_heartbeat WHERE node_id = '$1'")" = 1 ]; }
# step NODE LANE: NODE claims a unit of LANE and runs its job; RUN: the run
step() {
    RUN=$(node "$1" "$G" claim --lane "$2") || fail "claim --lane $2 as node $1"
    node "$1" "$G" job "$RUN" >/dev/null 2>>"$T/jobs.err" || true
}
step_ok() { # NODE LANE
    step "$1" "$2"
    expect_eq "$(sql "SELECT status FROM runs WHERE id = '$RUN'")" success "$2 run on node $1"
}
submit() { # I: goal I on the bare repository $T/rI.git; GID
    make_project "$T/w$1"
    git clone -q --bare "$T/w$1" "$T/r$1.git"
    goal_json "$T/r$1.git" "goal $1" >"$T/g$1.json"
    GID=$(node C "$G" submit "$T/g$1.json") || fail "submit goal $1"
}
clone_of() { # NODE I: NODE's clone of goal I's repository
    echo "$T/$1/repos/$(printf '%s' "$T/r$2.git" | sha256sum | cut -c1-16)"
}
linked() { # NODE I: the linked worktrees git lists in NODE's clone of goal I's repository
    local c
    c=$(clone_of "$1" "$2")
    [ -d "$c" ] || return 0
    git -C "$c" worktree list --porcelain | sed -n 's/^worktree //p' | grep -vx "$c" || true
}

# --- goals run partly on each node, by hand ---------------------------------------
submit 1
G1=$GID
step_ok A plan
step_ok A plan
step_ok A work
step_ok B work
step_ok B work
step_ok B work
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$G1'")" completed "goal 1"
submit 2
G2=$GID
step_ok A plan
step_ok A plan
step_ok A work
step_ok B work
node C "$G" cancel "$G2" >/dev/null 2>>"$T/jobs.err" || fail "cancel goal 2"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$G2'")" cancelled "goal 2"
submit 3
G3=$GID
step_ok A plan
step_ok A plan
step A work
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$RUN'")" failed "goal 3's first item run"
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE goal_id = '$G3' AND status = 'ready' AND next_attempt_at > $(($(date +%s) * 1000 + 300000))")" \
    1 "goal 3's item, ready in ten minutes"
for g in "$G1" "$G2"; do
    expect_eq "$(sql "SELECT string_agg(DISTINCT node_id, ' ' ORDER BY node_id) FROM runs WHERE goal_id = '$g' AND kind = 'execute'")" \
        "A B" "the nodes that ran goal ${g:0:8}'s items"
done
# what the ended goals left: A's worktrees of goals 1 and 2, B's of goal 2
# (B published goal 1 and removed its own)
for wt in "A/wt/$G1" "A/wt/$G2" "B/wt/$G2" "A/wt/$G3"; do
    [ -f "$T/$wt/.git" ] || fail "no worktree $wt before the daemons: $(ls -la "$T/$wt" 2>&1 | head -5)"
done
[ ! -e "$T/B/wt/$G1" ] || fail "B's worktree of goal 1, which B published, is still there"
ok
expect_eq "$(linked A 1)" "$T/A/wt/$G1" "A's clone of goal 1's repository, before"
expect_eq "$(linked B 2)" "$T/B/wt/$G2" "B's clone of goal 2's repository, before"
# a model's leftovers: a link out of the worktree, a .git naming another
# repository, a link to a folder deeper down
mkdir -p "$T/outside"
echo keep >"$T/outside/keep.txt"
make_project "$T/decoy"
ln -s "$T/outside" "$T/A/wt/$G2/out"
rm -f "$T/A/wt/$G2/.git"
echo "gitdir: $T/decoy/.git" >"$T/A/wt/$G2/.git"
mkdir -p "$T/B/wt/$G2/sub"
ln -s "$T/outside" "$T/B/wt/$G2/sub/deeper"

# --- 1: the daemons' sweeps --------------------------------------------------------
start_node A GOALD_MONITOR_SWEEP_INTERVAL_S=1
start_node B GOALD_MONITOR_SWEEP_INTERVAL_S=1
cleaned() {
    [ ! -e "$T/A/wt/$G1" ] && [ ! -e "$T/A/wt/$G2" ] && [ ! -e "$T/B/wt/$G2" ] &&
        [ -z "$(linked A 1)$(linked A 2)$(linked B 1)$(linked B 2)" ]
}
wait_diag() {
    ls -la "$T/A/wt" "$T/B/wt"
    for n in A B; do for i in 1 2 3; do echo "$n r$i: $(linked "$n" "$i" | tr '\n' ' ')"; done; done
    tail -5 "$T/A.err" "$T/B.err"
}
wait_until 30 cleaned
ok
sleep 2.5 # more sweeps: goal 3 is open
expect_eq "$(linked A 3)" "$T/A/wt/$G3" "A's worktree of goal 3 (open), through the sweeps"
expect_eq "$(git -C "$T/A/wt/$G3" rev-parse --abbrev-ref HEAD)" \
    "$(sql "SELECT branch FROM goals WHERE id = '$G3'")" "goal 3's worktree, on its branch"
expect_eq "$(cat "$T/outside/keep.txt")" keep "the folder a link in a worktree named"
expect_eq "$(git -C "$T/decoy" rev-parse --is-inside-work-tree)" true "the repository a .git named"
expect_eq "$(git -C "$T/decoy" status --porcelain)" "" "the repository a .git named, untouched"
stop_node A
stop_node B

# --- 2: an end another node makes goes at the next tick ----------------------------
start_node A
start_node B
sleep 1 # their first ticks (and sweeps) are over: the next sweep is 15 minutes away
[ -d "$T/A/wt/$G3" ] || fail "goal 3's worktree went before its goal ended"
ok
node C "$G" cancel "$G3" >/dev/null 2>>"$T/jobs.err" || fail "cancel goal 3"
gone3() { [ ! -e "$T/A/wt/$G3" ] && [ -z "$(linked A 3)" ]; }
wait_until 10 gone3
ok
grep -q "its worktree $T/A/wt/$G3 removed" "$T/A.log" || fail "A's log says it removed goal 3's worktree"
ok
stop_node A
stop_node B
for n in A B; do
    expect_eq "$(ls -A "$T/$n/wt")" .locks "what is left in $n's worktree root"
    for i in 1 2 3; do expect_eq "$(linked "$n" "$i")" "" "linked worktrees of $n's clone of r$i"; done
done
done_tests
