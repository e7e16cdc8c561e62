#!/usr/bin/env bash
# Two nodes, one PostgreSQL queue, 20 goals of 3 items each on
# bare remotes (clone mode: each node works in its own clone, an item counts
# as done once its commit is on refs/goald/<goal-id> of the remote).
#
#   NODES_KILLS=0 (pg.nodes_work): the two daemons work the queue.
#   NODES_KILLS=N (pg.nodes_chaos): meanwhile N times a node dies - its
#     daemon and its running jobs get SIGKILL - and comes back after 0 to 3
#     s (so that sometimes the other node finds it dead first, sometimes it
#     adopts its own orphans); halfway, the PostgreSQL server is restarted.
#
# At the end: every goal completed, no run left running, on every remote
# each item committed exactly once (Work-Item-Id trailers between main and
# refs/goald/<goal-id>) and the goal's recorded head is that ref; both nodes
# did work; never more than 2 work runs of a node at once (work_cap) nor 3
# over both (global_work_cap), from the runs' recorded intervals.
#
# A server of its own (tests/pg/own.sh), so that the restart disturbs no
# other test.  NODES_SEED reruns one random sequence.
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"
. "$GOALD_SOURCE_DIR/tests/pg/own.sh"
KILLS=${NODES_KILLS:-0}
GOALS=${NODES_GOALS:-20}
SEED=${NODES_SEED:-$(date +%s)}
RANDOM=$SEED
echo "nodes: $GOALS goals, $KILLS node kills, seed $SEED (rerun with NODES_SEED=$SEED)"

on_finish() { for p in ${PID_A:-} ${PID_B:-}; do kill -KILL "$p" 2>/dev/null || true; done; }
own_pg_start

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_TICK_MS=100 GOALD_DAEMON_PLAN_CAP=1 \
    GOALD_DAEMON_WORK_CAP=2 GOALD_DAEMON_GLOBAL_WORK_CAP=3 GOALD_NODE_DEAD_AFTER_S=5 \
    GOALD_CONTROL_MAX_RETRIES=40 GOALD_CONTROL_BACKOFF_BASE_MS=10 GOALD_CONTROL_BACKOFF_MAX_MS=200
# answers for twice the goals (killed runs use some up); with kills, slow
# items, so that the kills fall while work is under way
script_generic $((GOALS * 2)) "$([ "$KILLS" = 0 ] && echo 200 || echo 2000)" 3 >"$GOALD_LLM_SCRIPT"

for i in $(seq 1 "$GOALS"); do
    make_project "$T/w$i"
    git clone -q --bare "$T/w$i" "$T/r$i.git"
    goal_json "$T/r$i.git" "goal $i" >"$T/g$i.json"
    "$G" submit "$T/g$i.json" >/dev/null || fail "submit goal $i"
done

start_node() { # NAME: its daemon (its own id, state folder, worktree root), pid in PID_NAME
    local n=$1 p
    mkdir -p "$T/$n"
    GOALD_NODE_ID=$n GOALD_NODE_STATE_DIR="$T/$n" GOALD_VCS_WORKTREE_ROOT="$T/$n/wt" \
        "$G" daemon --log-file "$T/$n.log" 2>>"$T/$n.err" &
    p=$!
    eval "PID_$n=$p"
    echo "$p" >>"$T/daemon_pids"
}
# kill_node NAME: the node dies: its daemon and every job of its runs
kill_node() {
    local n=$1 pid job
    pid=$(eval echo "\$PID_$n")
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for job in $(sql "SELECT pid FROM runs WHERE node_id = '$n' AND status = 'running' AND pid IS NOT NULL" 2>/dev/null); do
        kill -KILL -- "-$job" 2>/dev/null || kill -KILL "$job" 2>/dev/null || true
    done
}
open_goals() { sql "SELECT count(*) FROM goals WHERE status IN ('queued', 'active')" 2>/dev/null || echo 1; }
all_done() { [ "$(open_goals)" = 0 ]; }
wait_diag() { sql "SELECT status, count(*) FROM goals GROUP BY status"; tail -n 3 "$T"/*.err; }

start_node A
start_node B
kills=0 restarted=0
while [ "$kills" -lt "$KILLS" ] && ! all_done; do
    sleep "0.$((RANDOM % 10))"
    n=$([ $((RANDOM % 2)) = 0 ] && echo A || echo B)
    kill_node "$n"
    kills=$((kills + 1))
    if [ "$restarted" = 0 ] && [ "$kills" -ge $((KILLS / 2)) ]; then
        "$PGS" restart "$PGD" >/dev/null || fail "server restart"
        restarted=1
        echo "nodes: the server restarted after kill $kills"
    fi
    sleep "$((RANDOM % 3)).$((RANDOM % 10))"
    start_node "$n"
done
echo "nodes: $kills kills"
[ "$kills" -ge "$KILLS" ] || fail "every goal finished after $kills of $KILLS kills"
wait_until 600 all_done
ok
for n in A B; do kill -TERM "$(eval echo "\$PID_$n")"; done
for n in A B; do wait "$(eval echo "\$PID_$n")" 2>/dev/null || true; done

[ "$(sql "SELECT count(*) FROM goals WHERE status <> 'completed'")" = 0 ] ||
    fail "goals not completed: $(sql "SELECT title, status, blocked_reason FROM goals WHERE status <> 'completed'")
their runs that did not succeed: $(sql "SELECT r.node_id, r.kind, r.attempt, r.status, r.failure_reason FROM runs r JOIN goals g ON g.id = r.goal_id
     WHERE g.status <> 'completed' AND r.status <> 'success' ORDER BY r.created_at")
their escalations: $(sql "SELECT e.type, substr(e.packet, 1, 600) FROM escalations e JOIN goals g ON g.id = e.goal_id WHERE g.status <> 'completed'")"
ok
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE status <> 'done'")" 0 "items not done"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
# each item committed exactly once on its remote, and the ref is the head
for i in $(seq 1 "$GOALS"); do
    gid=$(sql "SELECT id FROM goals WHERE title = 'goal $i'")
    ref="refs/goald/$gid"
    trailers=$(git -C "$T/r$i.git" log --format='%(trailers:key=Work-Item-Id,valueonly)' "main..$ref" | grep .)
    expect_eq "$(printf '%s\n' "$trailers" | wc -l)" 3 "goal $i: item commits on $ref"
    expect_eq "$(printf '%s\n' "$trailers" | sort -u | wc -l)" 3 "goal $i: distinct items on $ref"
    expect_eq "$(git -C "$T/r$i.git" rev-parse "$ref")" "$(sql "SELECT head_commit FROM goals WHERE id = '$gid'")" \
        "goal $i: the remote's ref is the recorded head"
    git -C "$T/r$i.git" fsck --no-progress >/dev/null 2>&1 || fail "r$i.git: git fsck"
done
for n in A B; do
    [ "$(sql "SELECT count(*) FROM runs WHERE node_id = '$n' AND kind = 'execute' AND status = 'success'")" -ge 1 ] ||
        fail "node $n did no item"
done
ok
peak() { # at each work run's claim, the work runs under way ($1: on its node)
    sql "SELECT coalesce(max(c), 0) FROM (SELECT (SELECT count(*) FROM runs s WHERE s.lane = 'work'
           $1 AND s.created_at <= r.created_at AND r.created_at < s.ended_at) AS c
         FROM runs r WHERE r.lane = 'work') AS q1"
}
over() { # the runs under way at the claim of a run that saw more than $1 ($2: on its node)
    sql "SELECT r.id, r.node_id, r.created_at, s.id, s.node_id, s.status, s.created_at, s.ended_at,
                s.failure_reason
         FROM runs r JOIN runs s ON s.lane = 'work' $2 AND s.created_at <= r.created_at
           AND r.created_at < s.ended_at
         WHERE r.lane = 'work' AND (SELECT count(*) FROM runs x WHERE x.lane = 'work'
           $(printf '%s' "$2" | sed 's/s\./x./g') AND x.created_at <= r.created_at AND r.created_at < x.ended_at) > $1
         ORDER BY r.created_at, s.created_at"
}
[ "$(peak "AND s.node_id = r.node_id")" -le 2 ] ||
    fail "a node ran more than its work_cap of 2: $(over 2 "AND s.node_id = r.node_id")"
[ "$(peak "")" -le 3 ] || fail "more than global_work_cap (3) work runs at once"
ok
echo "nodes: $(sql "SELECT node_id || ' ' || count(*) FROM runs WHERE kind = 'execute' AND status = 'success' GROUP BY node_id ORDER BY 1" | tr '\n' ' ')items done;" \
    "$(sql "SELECT count(*) FROM runs WHERE status = 'aborted'") runs aborted and recovered"
done_tests
