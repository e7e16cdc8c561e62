#!/usr/bin/env bash
# The host stays clean: the cgroup a job makes for its sandboxed
# command is removed however the job ends - it exits, it is killed with
# SIGKILL while the command runs, or the daemon kills it after its timeout -
# with bubblewrap and with GOALD_SANDBOX=none (where the command outlives
# its job).  Checked in every cgroup hierarchy mounted here (v1 pids and
# memory, v2): no folder goald-<job pid>-* is left.
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

mkdir -p "$T/w"
run "$G" tool bash --root "$T/w" --args '{"command": "true"}'
if [ "$(jqo .meta.pids_cgroup)" != true ]; then
    echo "skip: goald cannot make cgroups on this machine ($(mount | grep -c cgroup) cgroup mounts)"
    exit 0
fi

# cgroup folders made by process $1, anywhere in the mounted hierarchies
cgroups_of() { find /sys/fs/cgroup -maxdepth 8 -type d -name "goald-$1-*" 2>/dev/null; }
has_cgroup() { [ -n "$(cgroups_of "$1")" ]; }
no_cgroup() { [ -z "$(cgroups_of "$1")" ]; }
job_pid() { sql "SELECT ifnull(pid, '') FROM runs WHERE kind = 'execute' AND status = 'running'"; }
job_started() { [ -n "$(job_pid)" ]; }

# scenario MODE HOW: a goal whose model runs `sleep` in the sandbox; HOW is
# exit (it ends by itself), kill (SIGKILL of the job) or timeout (the
# daemon's lane timeout).
scenario() {
    local mode=$1 how=$2 dir="$T/$1-$2" pid sleep=30 timeout=600
    [ "$how" = exit ] && sleep=1
    [ "$how" = timeout ] && timeout=3
    rm -f "$GOALD_DB" "$GOALD_DB"-*
    make_project "$dir/repo"
    {
        echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["ok"],"allowed_actions":["bash"],"verification":[]}}'
        echo '{"stage":"plan","content":{"work_items":[{"key":"wi-1","title":"wait","description":"","type":"code","priority":50,"effort":"S","critical":true,"depends_on":[]}]}}'
        echo "{\"stage\":\"execute\",\"tool_calls\":[{\"name\":\"bash\",\"arguments\":{\"command\":\"echo started >>work.log; sleep $sleep\"}}]}"
        echo '{"stage":"execute","tool_calls":[{"name":"complete","arguments":{"summary":"done"}}]}'
        echo '{"stage":"review","content":{"verdict":"pass","findings":[]}}'
    } >"$dir/script.jsonl"
    goal_json "$dir/repo" "wait" '{"push": false, "pull_request": false}' "true" >"$dir/goal.json"
    submit_goal "$dir/goal.json"
    GOALD_SANDBOX=$mode GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$dir/script.jsonl" \
        GOALD_CONTROL_MAX_RETRIES=0 GOALD_LANE_WORK_TIMEOUT_S=$timeout GOALD_DAEMON_KILL_GRACE_S=1 \
        "$G" daemon --once >"$dir/daemon.out" 2>"$dir/daemon.err" &
    local dpid=$!
    wait_until 60 job_started
    pid=$(job_pid)
    if [ "$how" != exit ]; then
        # the command runs in its cgroup
        wait_until 30 has_cgroup "$pid"
        [ "$how" = kill ] && kill -KILL "$pid"
    fi
    local drc=0
    wait "$dpid" || drc=$?
    # 3: the killed or timed-out item escalated and waits on a human (its
    # next run asks for the Plan B the dead one left owed: the script has
    # none, so recovery escalates)
    [ "$drc" = 0 ] || [ "$drc" = 3 ] || fail "$mode/$how: daemon --once failed ($drc): $(cat "$dir/daemon.err")"
    ok
    case "$how" in
    exit) expect_eq "$(sql "SELECT status FROM runs WHERE kind = 'execute'")" success "$mode/$how: the run" ;;
    kill) expect_eq "$(sql "SELECT status FROM runs WHERE kind = 'execute' ORDER BY created_at, rowid LIMIT 1")" aborted "$mode/$how: the run" ;;
    timeout) expect_eq "$(sql "SELECT status FROM runs WHERE kind = 'execute' ORDER BY created_at, rowid LIMIT 1")" timeout "$mode/$how: the run" ;;
    esac
    # the daemon has ended: nothing of the job is left
    no_cgroup "$pid" || fail "$mode/$how: cgroups of job $pid left: $(cgroups_of "$pid")"
    ok
    # nor is its command still running (unconfined, it is not bubblewrap's to kill)
    wt=$(sql "SELECT worktree FROM goals")
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/cwd" 2>/dev/null)" = "$wt" ] &&
            fail "$mode/$how: a process of the command outlived its job: $(tr '\0' ' ' <"$p/cmdline")"
    done
    ok
}

for mode in bwrap none; do
    for how in exit kill timeout; do
        scenario "$mode" "$how"
    done
done
done_tests
