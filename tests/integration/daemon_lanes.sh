#!/usr/bin/env bash
# Three goals of three items each, run at once by one daemon,
# stay within the lane caps (work 3, plan 1) and never run two units of
# one goal together but its items (goal.max_parallel_items, 3: each in a
# worktree of its own; the items here all append to one file, so the ones
# that land second conflict and run again, parallel_items.sh); and the
# caps are really reached (3 work jobs at once).
# Proof from recorded facts only, whatever the speed of the binary: the
# runs' [started_at, ended_at) intervals, the order of the run events in the
# ledger, and the daemon's own job.started / job.finished log lines.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_DAEMON_TICK_MS=100
# slow execute answers, so that three goals' items really overlap
script_generic 3 1500 3 >"$GOALD_LLM_SCRIPT"
for n in 1 2 3; do
    make_project "$T/r$n"
    goal_json "$T/r$n" "goal $n" >"$T/g$n.json"
    submit_goal "$T/g$n.json"
done

"$G" daemon --once --log-file "$T/d.log" 2>"$T/daemon.err" ||
    fail "daemon --once exited $?: $(tail -5 "$T/daemon.err")"
ok

# every goal completed, every item done, no run left running or failed
expect_eq "$(sql "SELECT count(*) FROM goals WHERE status = 'completed'")" 3 "completed goals"
expect_eq "$(sql "SELECT count(*) FROM work_items WHERE status = 'done'")" 9 "done items"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status <> 'success' AND error_class IS NOT 'conflict'")" 0 \
    "runs not successful, but for conflicts"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'success'")" 9 "execute runs that landed"

# concurrency per lane: at the start of each run, how many runs of its lane
# were under way (itself included)
peak() {
    sql "SELECT ifnull(max(c), 0) FROM (SELECT (SELECT count(*) FROM runs s WHERE s.lane = r.lane
           AND s.started_at <= r.started_at AND r.started_at < s.ended_at) AS c
         FROM runs r WHERE r.lane = '$1') AS q1"
}
expect_eq "$(peak work)" 3 "peak of the work lane (cap 3, reached)"
expect_eq "$(peak plan)" 1 "peak of the plan lane (cap 1)"
# two runs of one goal overlap only when both run items, whatever their
# lanes
expect_eq "$(sql "SELECT count(*) FROM runs r JOIN runs s ON s.goal_id = r.goal_id AND s.id <> r.id
                  AND s.started_at <= r.started_at AND r.started_at < s.ended_at
                  AND NOT (r.kind = 'execute' AND s.kind = 'execute')")" 0 \
    "overlapping runs of one goal, not both items"
# the three goals did run at once: some execute runs of different goals overlap
expect_eq "$(sql "SELECT count(*) > 0 FROM runs r JOIN runs s ON s.goal_id <> r.goal_id
                  AND r.kind = 'execute' AND s.kind = 'execute'
                  AND s.started_at <= r.started_at AND r.started_at < s.ended_at")" 1 \
    "items of different goals ran at once"

# the ledger's view: replaying the run events in their order (a run counts
# from run.claimed to its end event), the most runs of a lane, and of one
# goal, running at once
replay() { # $1: the jq key a run is counted under
    sql "SELECT json_object('type', type, 'run', run_id, 'goal', goal_id,
                            'lane', json_extract(payload, '\$.lane'))
         FROM events WHERE type IN ('run.claimed', 'run.success', 'run.failed', 'run.timeout',
                                    'run.aborted') ORDER BY id" |
        jq -s --arg by "$1" 'reduce .[] as $e ({lane: {}, n: {}, max: {}};
            if $e.type == "run.claimed" then .lane[$e.run] = $e.lane else . end
            | (if $by == "lane" then .lane[$e.run] else $e.goal end) as $k
            | .n[$k] = (.n[$k] // 0) + (if $e.type == "run.claimed" then 1 else -1 end)
            | .max[$k] = ([.max[$k] // 0, .n[$k]] | max)) | .max'
}
expect_eq "$(replay lane | jq '.work')" 3 "running work runs in the database at once"
expect_eq "$(replay lane | jq '.plan')" 1 "running plan runs in the database at once"
expect_eq "$(replay goal | jq '[.[]] | max <= 3')" true "running runs of one goal at once (its items: 3 at most)"

# the daemon's own view: its job.started and job.finished (or job.aborted)
# log lines in order; never over the caps, and 3 work jobs at once
jobs_peak() {
    jq -s --arg lane "$1" 'reduce (.[] | select(.event == "job.started" or .event == "job.finished"
                                             or .event == "job.aborted")) as $e
        ({lane: {}, n: 0, max: 0};
         if $e.event == "job.started" then .lane[$e.run] = $e.lane else . end
         | if .lane[$e.run] != $lane then .
           elif $e.event == "job.started" then .n += 1 | .max = ([.max, .n] | max)
           else .n -= 1 end) | .max' "$T/d.log"
}
expect_eq "$(jq -s '[.[] | select(.event == "job.started")] | length' "$T/d.log")" \
    "$(sql "SELECT count(*) FROM runs")" "job.started lines, one per run"
expect_eq "$(jobs_peak work)" 3 "work jobs of the daemon at once (cap 3, reached)"
expect_eq "$(jobs_peak plan)" 1 "plan jobs of the daemon at once (cap 1)"

# one commit per item on each branch (real git CLI)
for n in 1 2 3; do
    br=$(sql "SELECT branch FROM goals WHERE title = 'goal $n'")
    expect_eq "$(git -C "$T/r$n" log --format=%H "main..$br" | wc -l)" 3 "commits of goal $n"
    expect_eq "$(commits_per_item "$T/r$n" "$br" main)" 1 "commits per item of goal $n"
done
done_tests
