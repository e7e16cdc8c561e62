#!/usr/bin/env bash
# Special files, and comparison per test case: a gate's
# report file is written by the gate, so by the model, and goald reads it
# outside the sandbox.  Through whole goals with a scripted model:
#   - the model makes its test leave a FIFO (no writer) as the report: the job does
#     not hang, the gate result says why the report was ignored, and the
#     gate's own output still gives its test cases;
#   - the model replaces the report with a symlink to a JUnit file outside
#     the worktree (a planted secret): it is not read, its content appears
#     nowhere in the database;
#   - a real report the gate writes gives the gate's cases (gate_cases); a
#     report committed in the tree is never read (removed from the gate's copy).
. "$(dirname "$0")/../integration/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/sentinel.sh"
sentinel_plant

export GOALD_CONTROL_BACKOFF_BASE_MS=1
SECRET=PLANTED-REPORT-SECRET-5150
mkdir -p "$T/outside"
{
    echo '<testsuite>'
    for i in 1 2 3 4 5 6 7; do echo "<testcase classname=\"$SECRET\" name=\"t$i\"/>"; done
    echo '</testsuite>'
} >"$T/outside/secret.xml"

ELAB='{"components": ["repo"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
PLAN='{"work_items": [{"key": "wi-1", "title": "touch the report", "description": "", "type": "code", "priority": 50, "effort": "S", "critical": true, "depends_on": []}]}'
REVIEW='{"verdict": "approve", "findings": []}'

# goal NAME TOOL_CALL: a repository whose test prints TAP, a goal whose
# gate names report.xml, a model that makes TOOL_CALL (JSON) then completes;
# runs plan, plan and work (the work job under a 60 s limit) and sets
# RC_WORK and GR (the gate_results row of the work run)
goal() {
    local name=$1 call=$2 r
    R="$T/$name"
    make_repo "$R"
    printf 'echo "ok 1 - adds"\necho "ok 2 - multiplies"\n' >"$R/test.sh"
    git -C "$R" add -A && git -C "$R" commit -q -m tests
    cat >"$T/$name.jsonl" <<JSONL
{"content": $ELAB}
{"content": $PLAN}
{"tool_calls": [$call]}
{"tool_calls": [{"name": "complete", "arguments": {"summary": "done"}}]}
{"content": $REVIEW}
JSONL
    start_fake_llm "$name" openai "$T/$name.jsonl"
    export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
    export GOALD_DB="$T/$name.db"
    printf '{"title":"%s","repo":"%s","base_branch":"main","verification":[{"name":"tests","type":"test","command":"sh test.sh","must_pass":true,"report":"report.xml"}]}' \
        "$name" "$R" >"$T/$name.json"
    run "$G" submit "$T/$name.json"; expect_rc 0 "submit $name"
    for lane in plan plan; do
        r=$("$G" claim --lane $lane) || fail "claim $lane"
        "$G" job "$r" >/dev/null 2>>"$T/jobs.err" || fail "job $lane"
    done
    r=$("$G" claim --lane work) || fail "claim work"
    set +e
    timeout 60 "$G" job "$r" --json >"$T/$name.out" 2>>"$T/jobs.err"
    RC_WORK=$?
    set -e
    # the first result of the run: the gate on the new tree (a later one may be
    # the same gate with changed inputs restored from the baseline)
    GR=$(sql "SELECT id FROM gate_results WHERE run_id='$r' ORDER BY id LIMIT 1")
}

# ===== 1. a FIFO at the report path ============================================
start=$(date +%s)
# (gates run on a throw-away copy of the tree, where a FIFO the model made
# beforehand does not come along: the model makes the test itself leave one)
goal fifo '{"name": "write", "arguments": {"path": "test.sh", "content": "rm -f report.xml; mkfifo report.xml\necho \"ok 1 - adds\"\necho \"ok 2 - multiplies\"\n"}}'
[ "$RC_WORK" != 124 ] || fail "the job hung on the FIFO report (killed after 60 s)"
ok
[ $(($(date +%s) - start)) -lt 50 ] || fail "the job took $(($(date +%s) - start)) s"
ok
expect_eq "$RC_WORK" 0 "work job exit"
expect_eq "$(sql "SELECT passed||' '||ifnull(tests_format,'-')||' '||ifnull(tests_total,'-') FROM gate_results WHERE id=$GR")" "1 tap 2"
case "$(sql "SELECT note FROM gate_results WHERE id=$GR")" in
    *"report report.xml ignored: report.xml: a fifo, not a regular file"*) ok ;;
    *) fail "the gate result does not say why the report was ignored: $(sql "SELECT note FROM gate_results WHERE id=$GR")" ;;
esac
case "$(sql "SELECT group_concat(payload) FROM events WHERE type='gate.completed'")" in
    *"a fifo, not a regular file"*) ok ;; *) fail "the gate.completed event lacks the note" ;; esac
expect_eq "$(sql "SELECT group_concat(status||':'||name, ',') FROM (SELECT * FROM gate_cases WHERE gate_result_id=$GR ORDER BY rowid)")" \
    "pass:adds,pass:multiplies" "the output's cases"

# ===== 2. a symlink to a file outside the worktree ===============================
# (the gate makes the link: a report committed in the tree is removed from
# the copy before the gate runs, and never read)
goal link '{"name": "write", "arguments": {"path": "test.sh", "content": "rm -f report.xml; ln -s '"$T"'/outside/secret.xml report.xml\necho \"ok 1 - adds\"\necho \"ok 2 - multiplies\"\n"}}'
expect_eq "$RC_WORK" 0 "work job exit"
expect_eq "$(sql "SELECT ifnull(tests_format,'-')||' '||ifnull(tests_total,'-') FROM gate_results WHERE id=$GR")" "tap 2" \
    "counts from the output, not from the linked file"
case "$(sql "SELECT note FROM gate_results WHERE id=$GR")" in
    *"report report.xml ignored: report.xml:"*"outside the worktree"*) ok ;;
    *) fail "note: $(sql "SELECT note FROM gate_results WHERE id=$GR")" ;;
esac
sqlite3 "$GOALD_DB" .dump | grep -q "$SECRET" && fail "the linked file's content is in the database"
ok
sentinel_check "a report linked out" "$T"/*.log

# ===== 3. a real report in the worktree ============================================
goal junit '{"name": "write", "arguments": {"path": "test.sh", "content": "echo \"<testsuite><testcase classname=\\\"calc\\\" name=\\\"adds\\\"/><testcase classname=\\\"calc\\\" name=\\\"old\\\"><skipped/></testcase></testsuite>\" > report.xml\n"}}'
expect_eq "$RC_WORK" 0 "work job exit"
expect_eq "$(sql "SELECT ifnull(tests_format,'-')||' '||tests_passed||' '||tests_skipped||' '||ifnull(note,'-') FROM gate_results WHERE id=$GR")" "junit 1 1 -"
expect_eq "$(sql "SELECT group_concat(status||':'||name, ',') FROM (SELECT * FROM gate_cases WHERE gate_result_id=$GR ORDER BY rowid)")" \
    "pass:calc::adds,skip:calc::old"
sentinel_check "all three goals" "$T"/*.log
done_tests
