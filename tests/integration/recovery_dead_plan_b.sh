#!/usr/bin/env bash
# Recovery takes the facts, not a job context - a run that dies
# (here: killed by the daemon past its timeout) keeps its Plan B.  With
# control.max_retries 0 and one model, the first failure of an item is due
# for tier 3.  The daemon, which never calls a model, cannot ask for the
# strategy itself: it leaves it owed (event recovery.plan_b, pending), the
# item goes to tier 3, and its next run asks stage plan_b first, follows
# the strategy (it is in the execute prompt) and completes.  Before, the
# dead run went straight to tier 4: the item escalated, the goal blocked.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

export GOALD_DAEMON_TICK_MS=100 GOALD_CONTROL_BACKOFF_BASE_MS=50
export GOALD_LANE_WORK_TIMEOUT_S=3 GOALD_DAEMON_KILL_GRACE_S=1 GOALD_CONTROL_MAX_RETRIES=0
marker="97531.$$"  # this test's own: both builds' suites run side by side
# one model (a fake OpenAI server, whose log shows every prompt), its
# answers in order
{
    echo '{"content": {"components": ["work.log"], "implicit_requirements": [], "success_criteria": ["the gate passes"], "allowed_actions": ["ls", "read", "edit", "bash", "run_gates"], "verification": []}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "item 1", "description": "append a line to work.log", "type": "code", "effort": "S", "critical": true, "depends_on": []}]}}'
    # the first execute answer hangs until the daemon kills the job
    jq -nc --arg m "$marker" '{tool_calls: [{name: "bash", arguments: {command: "sleep \($m)", timeout_s: 600}}]}'
    echo '{"content": {"strategy": "PLAN-B-AFTER-DEATH: smaller steps", "reason": "the run hung"}}'
    echo '{"tool_calls": [{"name": "bash", "arguments": {"command": "date +%s%N >> work.log"}}, {"name": "complete", "arguments": {"summary": "appended a line to work.log"}}]}'
    echo '{"content": {"verdict": "pass", "findings": []}}'
} >"$T/a.jsonl"
start_fake_llm a openai "$T/a.jsonl"
export GOALD_LLM_MODELS="[{\"provider\":\"openai\",\"model\":\"ma\",\"base_url\":\"$FAKE_URL\"}]"
make_project "$T/r"
goal_json "$T/r" "goal pb" >"$T/g.json"
submit_goal "$T/g.json"

"$G" daemon --once --log-file "$T/d.log" 2>"$T/daemon.err" &
DPID=$!
FAKE_PIDS="$FAKE_PIDS $DPID"
finished() { ! kill -0 "$DPID" 2>/dev/null; }
wait_until 120 finished
drc=0
wait "$DPID" || drc=$?

run1=$(sql "SELECT id FROM runs WHERE kind = 'execute' ORDER BY created_at, rowid LIMIT 1")
expect_eq "$(sql "SELECT status || ' ' || tier FROM runs WHERE id = '$run1'")" "timeout 1" "the first run died at tier 1"
expect_eq "$(sql "SELECT json_extract(payload, '\$.action') || ' ' || json_extract(payload, '\$.tier') || ' ' || ifnull(json_extract(payload, '\$.pending'), 0) FROM events WHERE run_id = '$run1' AND type LIKE 'recovery.%' OR run_id = '$run1' AND type LIKE 'retry.%'")" \
    "plan_b 3 1" "the dead run's recovery: Plan B, owed"
expect_eq "$(sql "SELECT count(*) FROM escalations")" 0 "no escalation"
expect_eq "$drc" 0 "daemon --once exit status ($(tail -3 "$T/daemon.err"))"
run2=$(sql "SELECT id FROM runs WHERE kind = 'execute' AND id <> '$run1'")
expect_eq "$(sql "SELECT status || ' ' || tier FROM runs WHERE id = '$run2'")" "success 3" "the next run, at tier 3"
expect_eq "$(sql "SELECT json_extract(payload, '\$.strategy') FROM events WHERE run_id = '$run2' AND type = 'recovery.plan_b'")" \
    "PLAN-B-AFTER-DEATH: smaller steps" "its Plan B, asked by the next run"
expect_eq "$(sql "SELECT strategy || ' ' || status FROM work_items")" "PLAN-B-AFTER-DEATH: smaller steps done" "the item's strategy"
# the stage plan_b was told what failed, once; the strategy was in the
# prompt of the execute call that followed it
stage_prompts() { jq -c --arg s "$1" 'select(.headers["x-goald-stage"] == $s) | .body.messages[1].content' "$FAKE_LOG"; }
expect_eq "$(stage_prompts plan_b | wc -l)" 1 "one plan_b call"
case "$(stage_prompts plan_b)" in *"It failed (timeout): killed after its timeout of 3 s"*) ok ;;
    *) fail "Plan B was not told what failed: $(stage_prompts plan_b)" ;; esac
case "$(stage_prompts execute | sed -n 1p)" in *PLAN-B-AFTER-DEATH*) fail "the strategy came before Plan B" ;; *) ok ;; esac
case "$(stage_prompts execute | sed -n 2p)" in *"Strategy to follow (earlier ones failed): PLAN-B-AFTER-DEATH: smaller steps"*) ok ;;
    *) fail "the Plan B strategy is not in the next execute prompt" ;; esac
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"
pgrep -f "^sleep $marker" >/dev/null && fail "a process \"sleep $marker\" is left"
ok
done_tests
