#!/usr/bin/env bash
# Nodes.  Two daemons (nodes A and B: their own node id, state
# folder and worktree root) on one PostgreSQL queue.
#   1. A submit on a machine whose socket reaches no daemon wakes node B by
#      NOTIFY: B, whose tick is a minute, claims within seconds.
#   2. Lane caps: work_cap 2 per node, global_work_cap 3: from the runs'
#      recorded [claimed, ended) intervals, never more than 2 work runs of a
#      node at once nor 3 over both; the global cap is reached; both nodes
#      did work; `status --json` lists both nodes with their lanes.
#   3. A dead node: A's daemon and its running job killed with SIGKILL; B
#      (node.dead_after_s 3) aborts A's run ("its node A stopped beating")
#      without signalling anything, and the item is done by B; nothing is
#      left running; every item has one successful run; `status` lists A
#      as stale, with no job (B took its run over).
#   4. A node gone for good left an item held (its job died after its run's
#      end, before the run's recovery): B recovers the item and does it.
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"
[ -n "${GOALD_TEST_PG:-}" ] || fail "GOALD_TEST_PG is not set (the pg fixture)"

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_PLAN_CAP=1 GOALD_DAEMON_WORK_CAP=2 \
    GOALD_CONTROL_BACKOFF_BASE_MS=10 GOALD_CONTROL_BACKOFF_MAX_MS=100
script_generic 12 1500 1 >"$GOALD_LLM_SCRIPT"

# node NAME CMD...: CMD as node NAME (its id, folder and worktree root)
node() {
    local n=$1
    shift
    mkdir -p "$T/$n"
    GOALD_NODE_ID=$n GOALD_NODE_STATE_DIR="$T/$n" GOALD_VCS_WORKTREE_ROOT="$T/$n/wt" "$@"
}
start_node() { # NAME [VAR=VALUE...]: the daemon of node NAME, its pid in PID_<NAME>
    local n=$1
    shift
    mkdir -p "$T/$n"
    # not through node(): $! must be the daemon itself, not a subshell
    GOALD_NODE_ID=$n GOALD_NODE_STATE_DIR="$T/$n" GOALD_VCS_WORKTREE_ROOT="$T/$n/wt" \
        env "$@" "$G" daemon --log-file "$T/$n.log" 2>>"$T/$n.err" &
    eval "PID_$n=$!"
    FAKE_PIDS="$FAKE_PIDS $!" # stopped at the end, whatever happens
    wait_until 30 node_beats "$n"
}
node_beats() { [ "$(sql "SELECT count(*) FROM daemon_heartbeat WHERE node_id = '$1'")" = 1 ]; }
submit_n() { # FIRST LAST: goals on fresh projects, submitted from node C (no daemon)
    local i
    for i in $(seq "$1" "$2"); do
        make_project "$T/r$i"
        goal_json "$T/r$i" "goal $i" >"$T/g$i.json"
        node C "$G" submit "$T/g$i.json" >/dev/null || fail "submit goal $i"
    done
}
all_done() { [ "$(sql "SELECT count(*) FROM goals WHERE status NOT IN ('completed')")" = 0 ]; }
wait_diag() {
    sql "SELECT title, status FROM goals"
    # why a goal that is not completed stopped: its runs' failures
    sql "SELECT g.title, r.node_id, r.kind, r.status, r.failure_reason FROM runs r JOIN goals g ON g.id = r.goal_id
         WHERE g.status <> 'completed' AND r.status <> 'success' ORDER BY r.created_at"
    tail -n 3 "$T"/*.err
}

# --- 1: NOTIFY wakes a node whose socket nobody writes to -------------------------
start_node B GOALD_DAEMON_TICK_MS=60000 GOALD_NODE_DEAD_AFTER_S=3
sleep 1 # B's first tick is over: it waits a minute unless woken
submit_n 1 1
claimed_by_b() { [ "$(sql "SELECT count(*) FROM runs WHERE node_id = 'B'")" -ge 1 ]; }
wait_until 10 claimed_by_b
ok
wait_until 60 all_done

# --- 2: lane caps per node and over the nodes -------------------------------------
kill -TERM "$PID_B"
wait "$PID_B" 2>/dev/null || true
export GOALD_DAEMON_GLOBAL_WORK_CAP=3 GOALD_DAEMON_TICK_MS=100 GOALD_NODE_DEAD_AFTER_S=3
start_node A
start_node B
submit_n 2 9
node A "$G" status --json >"$T/status.json" || true
jq -e '.nodes | length == 2' "$T/status.json" >/dev/null ||
    fail "status lists both nodes: $(cat "$T/status.json")"
jq -e '[.nodes[].lanes.work.cap] == [2, 2]' "$T/status.json" >/dev/null ||
    fail "each node's work lane cap: $(jq -c .nodes "$T/status.json")"
jq -e '.daemon.node_id == "A" and .daemon.state == "running"' "$T/status.json" >/dev/null ||
    fail "status's daemon is this node's (A): $(jq -c .daemon "$T/status.json")"
ok
wait_until 120 all_done
# at each run's claim, how many work runs (itself included) were under way:
# on its node, and on every node
peak() {
    sql "SELECT coalesce(max(c), 0) FROM (SELECT (SELECT count(*) FROM runs s WHERE s.lane = 'work'
           $1 AND s.created_at <= r.created_at AND r.created_at < s.ended_at) AS c
         FROM runs r WHERE r.lane = 'work') AS q1"
}
[ "$(peak "AND s.node_id = r.node_id")" -le 2 ] || fail "a node ran more than its work_cap of 2"
ok
expect_eq "$(peak "")" 3 "work runs at once over both nodes (global cap 3, reached)"
for n in A B; do
    [ "$(sql "SELECT count(*) FROM runs WHERE node_id = '$n' AND kind = 'execute'")" -ge 1 ] ||
        fail "node $n ran no item"
done
ok

# --- 3: a node dies; the other recovers its run -----------------------------------
# B stops (cleanly) until A has the item: not SIGSTOP, which can freeze B
# inside a write transaction, holding the one write lock of every node
kill -TERM "$PID_B"
wait "$PID_B" 2>/dev/null || true
submit_n 10 10
a_runs() { [ -n "$(sql "SELECT pid FROM runs WHERE node_id = 'A' AND status = 'running' AND kind = 'execute' AND pid IS NOT NULL")" ]; }
wait_until 60 a_runs
run_id=$(sql "SELECT id FROM runs WHERE node_id = 'A' AND status = 'running' AND kind = 'execute'")
job=$(sql "SELECT pid FROM runs WHERE id = '$run_id'")
kill -KILL "$PID_A" "$job"
kill -KILL -- "-$job" 2>/dev/null || true # its sandboxed commands
wait "$PID_A" 2>/dev/null || true
start_node B # A's heartbeat is fresh at B's start: B aborts A's run once it is 3 s old
wait_until 60 all_done
expect_eq "$(sql "SELECT status FROM runs WHERE id = '$run_id'")" aborted "the dead node's run"
case "$(sql "SELECT failure_reason FROM runs WHERE id = '$run_id'")" in
*"node A stopped beating"* | *"node A has no heartbeat"*) ok ;;
*) fail "why A's run was aborted: $(sql "SELECT failure_reason FROM runs WHERE id = '$run_id'")" ;;
esac
item=$(sql "SELECT item_id FROM runs WHERE id = '$run_id'")
expect_eq "$(sql "SELECT node_id || ' ' || status FROM runs WHERE item_id = '$item' AND id <> '$run_id'")" \
    "B success" "the item, done again by B"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0 "runs left running"
expect_eq "$(sql "SELECT count(*) FROM work_items w WHERE (SELECT count(*) FROM runs r
               WHERE r.item_id = w.id AND r.kind = 'execute' AND r.status = 'success') <> 1")" 0 \
    "items without exactly one successful run"
grep -q '"node.run_aborted"' "$T/B.log" || fail "B's log says it took over A's run"
ok
# `status`: the dead node is listed (stale), without the job B took over
node B "$G" status --json >"$T/status3.json" || true
jq -e --arg r "$run_id" '[.nodes[] | select(.node_id == "A") | .lanes.jobs[]? | select(.run_id == $r)] == []' \
    "$T/status3.json" >/dev/null || fail "status lists A's taken-over job on A: $(jq -c .nodes "$T/status3.json")"
jq -e '.nodes[] | select(.node_id == "A") | .state == "stale" and .lanes.work.running == 0' \
    "$T/status3.json" >/dev/null || fail "A, stale, runs nothing: $(jq -c .nodes "$T/status3.json")"
jq -e '[.running[] | select(.node_id == "A")] == []' "$T/status3.json" >/dev/null ||
    fail "status lists a running job on A: $(jq -c .running "$T/status3.json")"
ok
node B "$G" status >"$T/status3.txt" || true
grep -q '^           A stale, plan 0/1, work 0/2$' "$T/status3.txt" ||
    fail "status's line of node A: $(cat "$T/status3.txt")"
ok
kill -TERM "$PID_B"
wait "$PID_B" 2>/dev/null || true

# --- 4: a node gone for good left an item held ------------------------------------
# A's job dies after its run's end, before that run's recovery (GOALD_FAULT=
# job.after_run_end, the job run by hand as node A: no daemon of A watches
# it), and A never comes back.  B recovers the item once A's run ended 3 s
# ago (node.dead_after_s) and does it.
export GOALD_LLM_SCRIPT="$T/s4.jsonl"
script_outage >"$GOALD_LLM_SCRIPT"
submit_n 11 11
gid=$(sql "SELECT id FROM goals WHERE title = 'goal 11'")
for lane in plan plan work; do
    RUN=$(node A "$G" claim --lane "$lane") || fail "claim --lane $lane as node A"
    node A env GOALD_FAULT=job.after_run_end GOALD_LLM_RETRY_MAX=0 "$G" job "$RUN" >/dev/null 2>&1 || true
done
expect_eq "$(sql "SELECT kind || ' ' || status FROM runs WHERE id = '$RUN'")" "execute failed" "A's killed job's run"
expect_eq "$(sql "SELECT status FROM work_items WHERE goal_id = '$gid'")" in_progress "its item, held"
start_node B GOALD_NODE_DEAD_AFTER_S=3
goal11_done() { [ "$(sql "SELECT status FROM goals WHERE id = '$gid'")" = completed ]; }
wait_until 60 goal11_done
grep -q '"node.item_recovered"' "$T/B.log" || fail "B's log says it recovered the item A left held"
expect_eq "$(sql "SELECT count(*) FROM events WHERE run_id = '$RUN' AND type = 'retry.scheduled'")" 1 \
    "the item A left held, recovered once"
expect_eq "$(sql "SELECT node_id || ' ' || status FROM runs WHERE goal_id = '$gid' AND kind = 'execute' AND id <> '$RUN'")" \
    "B success" "the item, done by B"
kill -TERM "$PID_B"
wait "$PID_B" 2>/dev/null || true
done_tests
