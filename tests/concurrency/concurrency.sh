#!/usr/bin/env bash
# The concurrency harness: the daemon runs three work jobs at once while CLI
# readers and submitters hammer the same database for GOALD_CONCURRENCY_S
# seconds (default 60).  No SQLITE_BUSY (or any error) may reach a user, and
# no event may be lost: every submit has its goal.submitted event and the
# event ids form an unbroken sequence.
. "$(dirname "$0")/../integration/lib.sh"

SECS=${GOALD_CONCURRENCY_S:-60}
N=600
{
    for i in $(seq 1 $N); do
        echo '{"stage": "elaborate", "content": {"components": [], "implicit_requirements": [], "success_criteria": ["notes.txt exists"], "allowed_actions": ["read", "write", "bash"], "verification": []}, "usage": {"input": 100, "output": 20}}'
        echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "write notes", "description": "", "type": "doc", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}, "usage": {"input": 100, "output": 20}}'
        echo '{"stage": "execute", "sleep_ms": 5000, "tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "done\n"}}, {"name": "complete", "arguments": {"summary": "wrote notes.txt"}}], "usage": {"input": 200, "output": 30}}'
        echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}, "usage": {"input": 50, "output": 10}}'
    done
} >"$T/script.jsonl"
# plan cap 3: on a loaded 2-core machine one plan job at a time cannot feed three workers
export GOALD_LLM_SCRIPT="$T/script.jsonl" GOALD_DAEMON_WORK_CAP=${GOALD_DAEMON_WORK_CAP:-3} GOALD_DAEMON_PLAN_CAP=3 GOALD_DAEMON_TICK_MS=100
goal() { printf '{"title": "concurrent %s", "verification": [{"name": "ok", "type": "custom", "command": "true"}]}' "$1"; }

for i in $(seq 1 12); do goal "seed $i" | "$G" submit - >>"$T/submitted"; done
"$G" daemon --log-file "$T/daemon.log" 2>"$T/daemon.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
# readers start once the daemon is up: before that, "not running" (exit 3)
# is the right answer, not an error
up=$((SECONDS + 30))
until "$G" status >/dev/null 2>&1; do
    [ $SECONDS -lt $up ] || fail "the daemon did not start in 30 s: $(tail -3 "$T/daemon.err")"
    sleep 0.1
done

end=$((SECONDS + SECS))
reader() {
    local n=0
    while [ $SECONDS -lt $end ]; do
        for cmd in "goals --json" "status --json" "events --json" "escalations --json"; do
            # shellcheck disable=SC2086
            rc=0; "$G" $cmd >"$T/reader.out.$BASHPID" 2>>"$T/reader.err" || rc=$?
            [ $rc -eq 0 ] || echo "reader: goald $cmd failed ($rc): $(head -c 400 "$T/reader.out.$BASHPID")" >>"$T/reader.err"
            n=$((n + 1))
        done
        id=$(tail -n1 "$T/submitted")
        "$G" report "$id" --json >/dev/null 2>>"$T/reader.err" || echo "reader: report failed" >>"$T/reader.err"
    done
    echo $n >>"$T/reads"
}
submitter() {
    local k=0
    while [ $SECONDS -lt $end ]; do
        k=$((k + 1))
        if id=$(goal "$1-$k" | "$G" submit - 2>>"$T/submit.err"); then
            echo "$id" >>"$T/submitted"
        else
            echo "submitter: submit failed" >>"$T/submit.err"
        fi
        sleep 0.2
    done
}
reader & r1=$!
reader & r2=$!
submitter a & s1=$!
submitter b & s2=$!
# watch the lanes: the daemon must actually run three work jobs at once
max_work=0
while [ $SECONDS -lt $end ]; do
    w=$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT count(*) FROM runs WHERE status = 'running' AND lane = 'work'" 2>/dev/null || echo 0)
    [ "$w" -gt "$max_work" ] && max_work=$w
    a=$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - last_tick FROM daemon_heartbeat" 2>/dev/null || echo 0)
    echo "${a:-0}" >>"$T/tick_ages"
    sleep 0.2
done
wait $r1 $r2 $s1 $s2
echo "heartbeat age seen: max $(sort -n "$T/tick_ages" | tail -1) ms"
kill -TERM $DPID; wait $DPID 2>/dev/null || true

# no error reached a user
for f in reader.err submit.err; do
    [ ! -s "$T/$f" ] || fail "$f: $(head -5 "$T/$f")"
    ok
done
grep -qi 'busy\|locked' "$T/daemon.err" && fail "the daemon met a locked database: $(grep -i 'busy\|locked' "$T/daemon.err" | head -3)"
ok
# from the runs' own intervals too: the most work runs overlapping at any start
overlap=$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT max(n) FROM (SELECT (SELECT count(*) FROM runs b WHERE b.lane = 'work'
          AND b.started_at <= a.started_at AND ifnull(b.ended_at, 9e15) > a.started_at) AS n
          FROM runs a WHERE a.lane = 'work')")
[ "$max_work" -gt "$overlap" ] && overlap=$max_work
expect_eq "$overlap" 3 "most work jobs at once (never more than the cap, and the cap reached)"
# no event lost: each submit has its event, and ids have no gap
while read -r id; do echo "$id"; done <"$T/submitted" | sort >"$T/ids"
sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT goal_id FROM events WHERE type = 'goal.submitted' ORDER BY goal_id" >"$T/evids"
diff "$T/ids" "$T/evids" >/dev/null || fail "submits without their goal.submitted event"
ok
expect_eq "$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT count(*) = max(id) - min(id) + 1 FROM events")" 1 "event sequence without gaps"
expect_eq "$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "PRAGMA integrity_check")" ok "integrity"
done_goals=$(sqlite3 -cmd ".timeout 10000" "$GOALD_DB" "SELECT count(*) FROM goals WHERE status = 'completed'")
[ "$done_goals" -ge 2 ] || fail "only $done_goals goals completed"
ok
echo "reads: $(paste -sd+ "$T/reads" | bc), submits: $(wc -l <"$T/submitted"), completed: $done_goals, most work jobs at once: $max_work"
done_tests
