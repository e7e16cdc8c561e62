#!/usr/bin/env bash
# The cron lane and the daemon's service side, with the real daemon:
#   A. a recurring goal: fires missed while the daemon was down coalesce into
#      one instance; a fire while that instance runs is skipped (no overlap);
#      the next fire after it completed makes a second instance;
#   B. a goal past its deadline raises one `deadline` escalation, shown by
#      `goald status --json` and `goald escalations --json`, and still
#      finishes;
#   C. SIGHUP reloads the configuration (lane caps, log level); a broken
#      file is refused and the daemon goes on with the old one;
#   D. `goald status` tells a daemon killed with -9 (stale) from a running
#      one; stderr lines carry journald priorities under systemd.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50
now_ms() { date +%s%3N; }

# --- A: a recurring goal ----------------------------------------------------------
export GOALD_LLM_SCRIPT="$T/a.jsonl"
script_generic 3 3000 1 >"$GOALD_LLM_SCRIPT"
make_project "$T/r"
goal_json "$T/r" "nightly" | jq '. + {schedule: "* * * * *", schedule_branch: "per_run"}' >"$T/tmpl.json"
submit_goal "$T/tmpl.json"
TMPL=$GOAL_ID
expect_eq "$(sql "SELECT is_template FROM goals WHERE id = '$TMPL'")" 1 "a goal with a schedule is a template"
# a first daemon makes the trigger, finds nothing runnable and exits (t0, t1:
# before and after it, so that a minute that begins meanwhile is allowed)
t0=$(now_ms)
run "$G" daemon --once
t1=$(now_ms)
expect_rc 0 "daemon --once with only a template"
expect_eq "$(sql "SELECT count(*) FROM triggers WHERE goal_id = '$TMPL'")" 1 "the template's trigger"
expect_eq "$(sql "SELECT count(*) FROM goals WHERE parent_id = '$TMPL'")" 0 "no instance before the fire"
next=$(sql "SELECT next_fire_at FROM triggers WHERE goal_id = '$TMPL'")
[ "$next" -gt "$t0" ] && [ "$next" -le $((t1 + 60000)) ] && [ $((next % 60000)) = 0 ] ||
    fail "next fire $next: not the next whole minute (daemon ran between $t0 and $t1)"
ok

# the daemon was down for the last four minutes: four fires were missed
minute=$(( $(now_ms) / 60000 * 60000 ))
sql "UPDATE triggers SET next_fire_at = $((minute - 180000)) WHERE goal_id = '$TMPL'"
t0=$(now_ms)
"$G" daemon --log-file "$T/d.log" 2>"$T/d.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
instances() { sql "SELECT count(*) FROM goals WHERE parent_id = '$TMPL'"; }
inst_running() { [ "$(sql "SELECT count(*) FROM runs r JOIN goals g ON g.id = r.goal_id WHERE g.parent_id = '$TMPL' AND r.kind = 'execute' AND r.status = 'running'")" = 1 ]; }
wait_until 30 inst_running
expect_eq "$(instances)" 1 "missed fires coalesce into one instance"
fires=$(sql "SELECT json_extract(payload, '\$.fires') FROM events WHERE goal_id = '$TMPL' AND type = 'trigger.fired'")
[ "$fires" -ge 4 ] && [ "$fires" -le 5 ] || fail "the fire should count the 4 missed fire times, got $fires"; ok
next=$(sql "SELECT next_fire_at FROM triggers WHERE goal_id = '$TMPL'")
[ "$next" -gt "$t0" ] || fail "the next fire ($next) is not computed from the daemon's time (after $t0)"
ok

# due again while the instance runs: skipped, never two at once
sql "UPDATE triggers SET next_fire_at = $(( $(now_ms) - 1000 )) WHERE goal_id = '$TMPL'"
# (>= 1: when a minute begins meanwhile the trigger is due, and skipped, again)
skipped() { [ "$(sql "SELECT count(*) FROM events WHERE goal_id = '$TMPL' AND type = 'trigger.skipped'")" -ge 1 ]; }
wait_until 10 skipped
expect_eq "$(instances)" 1 "no overlap while the instance is open"
first=$(sql "SELECT id FROM goals WHERE parent_id = '$TMPL'")
expect_eq "$(sql "SELECT json_extract(payload, '\$.open_instance') FROM events WHERE type = 'trigger.skipped' ORDER BY id LIMIT 1")" "$first" \
    "the skip names the open instance"
first_done() { [ "$(sql "SELECT status FROM goals WHERE id = '$first'")" = completed ]; }
wait_until 60 first_done

# due after it completed: a second instance, which completes too
sql "UPDATE triggers SET next_fire_at = $(( $(now_ms) - 1000 )) WHERE goal_id = '$TMPL'"
two_done() { [ "$(sql "SELECT count(*) FROM goals WHERE parent_id = '$TMPL' AND status = 'completed'")" = 2 ]; }
wait_until 60 two_done
expect_eq "$(instances)" 2 "instances"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id = '$TMPL' AND type = 'trigger.fired'")" 2 "trigger.fired events"
expect_eq "$(sql "SELECT is_template || ' ' || status FROM goals WHERE id = '$TMPL'")" "1 queued" \
    "the template stays a template"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE goal_id = '$TMPL'")" 0 "the template itself never runs"
# the two instances never overlapped
expect_eq "$(sql "SELECT count(*) FROM runs r JOIN runs s ON r.goal_id <> s.goal_id
                  AND s.started_at <= r.started_at AND r.started_at < s.ended_at")" 0 "overlapping runs of two instances"
# each instance has its own branch and commit
for g in $(sql "SELECT id FROM goals WHERE parent_id = '$TMPL'"); do
    br=$(sql "SELECT branch FROM goals WHERE id = '$g'")
    expect_eq "$(git -C "$T/r" rev-list --count "main..$br")" 1 "the commit of instance $g"
done
kill -TERM "$DPID"
wait "$DPID"
expect_eq "$?" 0 "daemon exit"

# --- B: a deadline ------------------------------------------------------------------
db_use b; export GOALD_LLM_SCRIPT="$T/b.jsonl"
script_generic 1 1500 1 >"$GOALD_LLM_SCRIPT"
make_project "$T/rb"
goal_json "$T/rb" "late" | jq '. + {deadline: "2020-01-01T00:00:00Z"}' >"$T/late.json"
submit_goal "$T/late.json"
LATE=$GOAL_ID
"$G" daemon 2>"$T/db.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
raised() { [ "$(sql "SELECT count(*) FROM escalations WHERE goal_id = '$LATE' AND type = 'deadline'")" = 1 ]; }
wait_until 10 raised
run "$G" status --json
expect_rc 0 "status"
[ "$(jqo .open_escalations)" -ge 1 ] || fail "status: open_escalations: $OUT"; ok
expect_eq "$(jqo .lanes.version)" "$("$G" --version | awk '{print $2}')" "the node says which goald it runs"
run "$G" escalations --json
expect_rc 0 "escalations"
expect_eq "$(jqo '[.[] | select(.type == "deadline")] | length')" 1 "the deadline escalation listed"
late_done() { [ "$(sql "SELECT status FROM goals WHERE id = '$LATE'")" = completed ]; }
wait_until 60 late_done
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE goal_id = '$LATE'")" 1 "raised once"
kill -TERM "$DPID"
wait "$DPID"

# a run that fails (its gate does not pass) is logged with its reason
db_use b2; export GOALD_LLM_SCRIPT="$T/b2.jsonl"
script_generic 1 0 1 >"$GOALD_LLM_SCRIPT"
make_project "$T/rb2"
goal_json "$T/rb2" "failing gate" '{"push": false, "pull_request": false}' 'test "$(wc -l <work.log)" -lt 2' >"$T/fail.json"
submit_goal "$T/fail.json"
GOALD_CONTROL_MAX_RETRIES=0 run "$G" daemon --once --log-file "$T/b2.log"
expect_rc 3 "daemon --once (a goal that fails: it waits on a human)"
frun=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND status = 'failed' ORDER BY created_at LIMIT 1")
[ -n "$frun" ] || fail "no failed execute run: $(sql "SELECT kind, status FROM runs")"; ok
expect_eq "$(jq -r --arg r "$frun" 'select(.run == $r and .event == "job.finished") | [.level, .status, .failure] | join("|")' "$T/b2.log")" \
    "warn|failed|$(sql "SELECT failure_reason FROM runs WHERE id = '$frun'")" "the failed run's log line"

# --- C: SIGHUP reloads the configuration -----------------------------------------------
db_use c; export GOALD_MONITOR_SWEEP_INTERVAL_S=1
unset GOALD_LLM_SCRIPT
echo '{"daemon": {"work_cap": 3}}' >"$T/cfg.json"
"$G" --config "$T/cfg.json" daemon --log-file "$T/c.log" 2>"$T/c.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
cap_is() { [ "$("$G" status --json 2>/dev/null | jq -r '.lanes.work.cap')" = "$1" ]; }
wait_until 20 cap_is 3
sleep 1.5
grep -q 'debug: ' "$T/c.err" && fail "debug lines before the reload"
ok
echo '{"daemon": {"work_cap": 2}, "log": {"level": "debug"}}' >"$T/cfg.json"
kill -HUP "$DPID"
wait_until 10 cap_is 2
reloaded() { grep -q '"event":"config.reloaded"' "$T/c.log"; }
wait_until 5 reloaded
expect_eq "$(jq -r 'select(.event == "config.reloaded") | .config' "$T/c.log")" "$T/cfg.json" "the reloaded file"
echo '{"daemon": {"work_cap": "many"}}' >"$T/cfg.json"
kill -HUP "$DPID"
refused() { grep -q "config not reloaded: .*daemon.work_cap: expected an integer" "$T/c.err"; }
wait_until 10 refused
sleep 0.3
kill -0 "$DPID" || fail "the daemon died of a broken config"; ok
cap_is 2 || fail "a refused config changed the cap"; ok
# the log level of the reloaded config took effect: the sweep's debug lines
debug_seen() { grep -q '^<*goald\[[0-9]*\]: debug: sweep: ' "$T/c.err"; }
wait_until 5 debug_seen
expect_eq "$(jq -r 'select(.level == "debug") | .msg' "$T/c.log" | head -n1 | cut -c1-7)" "sweep: " "debug lines in the log file"

# --- D: a stale daemon; journald priorities ------------------------------------------------
export GOALD_DAEMON_STALE_S=1
run "$G" status
expect_rc 0 "status (text)"
expect_out "running"
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
stale() { [ "$("$G" status --json | jq -r .daemon.state)" = stale ]; }
wait_until 5 stale
expect_eq "$("$G" status --json | jq -r .daemon.pid)" "$DPID" "the stale daemon's pid"
# a restarted daemon takes over the database (the lock died with the process)
run "$G" daemon --once
expect_rc 0 "daemon --once after a kill -9"
# under systemd (JOURNAL_STREAM names our stderr) each line has its priority
: >"$T/j.err"
JOURNAL_STREAM="$(stat -c '%d:%i' "$T/j.err")" "$G" daemon --once 2>"$T/j.err"
grep -q '^<6>goald\[[0-9]*\]: info: daemon.started' "$T/j.err" || fail "no <6> priority: $(cat "$T/j.err")"; ok
grep -v -q '^<[3467]>' "$T/j.err" && fail "a line without a priority: $(cat "$T/j.err")"
ok
# log.level in the config file sets the daemon's level from its start
echo '{"log": {"level": "warn"}}' >"$T/warn.json"
"$G" --config "$T/warn.json" daemon --once 2>"$T/warn.err"
expect_eq "$(cat "$T/warn.err")" "" "stderr of a daemon at log.level warn"
# a JOURNAL_STREAM that is not our stderr (a child of a service) adds nothing
JOURNAL_STREAM="1:1" "$G" daemon --once 2>"$T/j2.err"
grep -q '^goald\[[0-9]*\]: info: daemon.started' "$T/j2.err" || fail "a priority without the journal: $(cat "$T/j2.err")"; ok
done_tests
