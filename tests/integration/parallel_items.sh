#!/usr/bin/env bash
# Items of one goal side by side (goal.max_parallel_items), each in a
# worktree of its own, landing on the goal branch one after another:
#   1. a conflict: two items change the same line; the one that lands
#      second fails with class "conflict" (not counted as a failure), runs
#      again on the goal's head (which holds the other's commit) and lands;
#   2. a merged head whose gate fails: each item passes alone, the two
#      together break the gate; the second is judged on the merged tree,
#      fails with class gate against the first's commit, runs again there;
#   3. the daemon runs three independent items at once: their execute runs
#      overlap, every item lands, no item worktree or branch is left;
#   4. a job killed after its item landed, before the database knew;
#   5. a job killed in the middle of bringing its item onto the goal's
#      head (its branch moved, its folder not yet made again): the next
#      run finishes that first, so what it saves of the killed run is the
#      item's own change, not the other item's undone;
#   6. plan order: the second item of the plan, done first, waits while
#      the first runs, and lands after it.
# The order two jobs land in is left to the machine; each check holds
# for either order.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_VCS_WORKTREE_ROOT="$T/wt"
# the fake model's answers per item: its first and its second attempt
exec_entry() { # KEY HANG_MS TOOL_CALL...
    local key=$1 hang=$2
    shift 2
    jq -nc --arg m "Your work item $key:" --argjson h "$hang" \
        --argjson calls "$(printf '%s\n' "$@" | jq -s .)" \
        '{match: $m, hang_ms: $h, tool_calls: $calls}'
}
review_entry() { jq -nc --argjson r "$REVIEW" '{match: "goald'"'"'s review stage", content: $r, repeat: 0}'; }
plan2() {
    printf '{"work_items": [{"key": "alpha", "title": "Alpha change", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "beta", "title": "Beta change", "type": "code", "effort": "S", "critical": true, "depends_on": []}]}'
}
goal_with_gate() { # NAME REPO GATE_COMMAND
    jq -n --arg t "$1" --arg repo "$2" --arg cmd "$3" '{title: $t, repo: $repo, base_branch: "main",
        success_criteria: ["the check passes"],
        verification: [{name: "check", type: "test", command: $cmd, must_pass: true}]}' >"$T/$1.json"
    run "$G" submit "$T/$1.json"; expect_rc 0 "submit $1"; GID=$OUT
}
# claim_two: claim the work lane twice (both items run now); K1, K2 their
# keys, R1, R2 their runs
claim_two() {
    run "$G" claim --lane work --json; expect_rc 0 "claim 1"; R1=$(jqo .run_id)
    run "$G" claim --lane work --json; expect_rc 0 "claim 2 (a second item of the goal while one runs)"
    R2=$(jqo .run_id)
    K1=$(sql "SELECT w.key FROM runs r JOIN work_items w ON w.id = r.item_id WHERE r.id = '$R1'")
    K2=$(sql "SELECT w.key FROM runs r JOIN work_items w ON w.id = r.item_id WHERE r.id = '$R2'")
    [ -n "$K1" ] && [ -n "$K2" ] && [ "$K1" != "$K2" ] || fail "two items claimed: [$K1] [$K2]"
    ok
}
# both_jobs: run 1's job in the background, its first answer held back
# (the script's hang_ms) until 2's job has run; then wait for 1's
both_jobs() {
    "$G" job "$R1" --json >"$T/j1.out" 2>"$T/j1.err" &
    local p1=$!
    wait_until 30 grep -q "Your work item $K1:" "$FAKE_LOG"
    run "$G" job "$R2" --json; expect_rc 0 "job $K2"
    wait "$p1" || fail "job $K1 exited $?: $(cat "$T/j1.err")"
    ok
}
status_of() { sql "SELECT status || '/' || coalesce(error_class, '') FROM runs WHERE id = '$1'"; }

# ---- 1. two items change the same line ----
db_use conflict
make_repo "$T/r1"
printf 'one\ntwo\nthree\n' >"$T/r1/f.txt"
git -C "$T/r1" add f.txt && git -C "$T/r1" commit -q -m f
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan2)}"
    review_entry
    exec_entry alpha 3000 "$(write f.txt "$(printf 'one\nALPHA\nthree\n')")" "$(complete "alpha on line 2")"
    exec_entry beta 3000 "$(write f.txt "$(printf 'one\nBETA\nthree\n')")" "$(complete "beta on line 2")"
    exec_entry alpha 0 "$(write f.txt "$(printf 'one\nBETA\nALPHA\nthree\n')")" "$(complete "alpha after beta")"
    exec_entry beta 0 "$(write f.txt "$(printf 'one\nALPHA\nBETA\nthree\n')")" "$(complete "beta after alpha")"
} >"$T/s1.jsonl"
start_fake_llm s1 openai "$T/s1.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
goal_with_gate conflict "$T/r1" 'test -f f.txt'
step plan
step plan
claim_two
both_jobs
# exactly one landed; the other conflicted with it
S1=$(status_of "$R1") S2=$(status_of "$R2")
case "$S1 $S2" in
    "success/ failed/conflict") LOSER=$K2 LRUN=$R2 ;;
    "failed/conflict success/") LOSER=$K1 LRUN=$R1 ;;
    *) fail "one run lands, the other conflicts: [$S1] [$S2] $(sql "SELECT failure_reason FROM runs")" ;;
esac
ok
case "$(sql "SELECT failure_reason FROM runs WHERE id = '$LRUN'")" in
    *"another item of the goal landed first"*"conflict with"*"f.txt"*) ok ;;
    *) fail "the conflict names the file: $(sql "SELECT failure_reason FROM runs WHERE id = '$LRUN'")" ;;
esac
# not a failure of the item: retried at tier 1, no failure counted
expect_eq "$(sql "SELECT status || ' ' || tier FROM work_items WHERE key = '$LOSER'")" "ready 1" "the conflicted item is ready again"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'retry.scheduled' AND run_id = '$LRUN'")" 1 \
    "recovery retries a conflict"
step work
expect_eq "$(jqo .status)" success "the retry of $LOSER lands: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
# its retry started from the goal's head: the other item's line is there
case "$(grep "Your work item $LOSER:" "$FAKE_LOG" | tail -1)" in
    *"another item of the goal landed first"*) ok ;;
    *) fail "the retry's task says why it runs again" ;;
esac
step work
expect_eq "$(jqo .status)" success publish
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "goal 1 completed"
BR=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
expect_eq "$(git -C "$T/r1" log --format=%s "main..$BR" | wc -l)" 2 "two commits on the goal branch"
case "$(git -C "$T/r1" show "$BR:f.txt" | tr '\n' ' ')" in
    "one BETA ALPHA three"* | "one ALPHA BETA three"*) ok ;;
    *) fail "both changes on the head: $(git -C "$T/r1" show "$BR:f.txt")" ;;
esac
expect_eq "$(git -C "$T/r1" branch --list "$BR-item-*" | wc -l)" 0 "no item branch left"
expect_eq "$(ls "$T/wt" | grep -c items || true)" 0 "no item worktree left"

# ---- 2. each passes alone, the merged head fails its gate ----
db_use merged
make_repo "$T/r2"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan2)}"
    review_entry
    exec_entry alpha 3000 "$(write a.txt a)" "$(complete "added a.txt")"
    exec_entry beta 3000 "$(write b.txt b)" "$(complete "added b.txt")"
    exec_entry alpha 0 "$(write a2.txt a)" "$(complete "added a2.txt")"
    exec_entry beta 0 "$(write b2.txt b)" "$(complete "added b2.txt")"
} >"$T/s2.jsonl"
start_fake_llm s2 openai "$T/s2.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
goal_with_gate merged "$T/r2" 'if test -f a.txt && test -f b.txt; then echo "a.txt and b.txt together"; exit 1; fi'
step plan
step plan
claim_two
both_jobs
S1=$(status_of "$R1") S2=$(status_of "$R2")
case "$S1 $S2" in
    "success/ failed/gate") LOSER=$K2 LRUN=$R2 WON=$K1 ;;
    "failed/gate success/") LOSER=$K1 LRUN=$R1 WON=$K2 ;;
    *) fail "one lands, the other fails its gate on the merged head: [$S1] [$S2] $(sql "SELECT failure_reason FROM runs")" ;;
esac
ok
WONC=$(sql "SELECT commit_sha FROM work_items WHERE key = '$WON'")
# judged against the first's commit: the gate passed there
expect_eq "$(sql "SELECT data FROM decisions WHERE kind = 'verification' AND run_id = '$LRUN' ORDER BY id DESC LIMIT 1" | jq -r .baseline)" \
    "$WONC" "the second item's baseline is the first's commit"
case "$(sql "SELECT failure_reason FROM runs WHERE id = '$LRUN'")" in
    *"a.txt and b.txt together"*) ok ;;
    *) fail "the merged head's gate output: $(sql "SELECT failure_reason FROM runs WHERE id = '$LRUN'")" ;;
esac
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'worktree.caught_up' AND run_id = '$LRUN'")" 1 \
    "the second item was brought onto the first's commit"
step work
expect_eq "$(jqo .status)" success "the retry lands on the merged head: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
step work
expect_eq "$(sql "SELECT status || ' ' || partial FROM goals WHERE id = '$GID'")" "completed 0" "goal 2 completed: the final check passes"

# ---- 4. a job killed after its item landed, before the database knew ----
db_use killed
make_repo "$T/r4"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan2)}"
    review_entry
    for k in alpha beta; do
        exec_entry "$k" 3000 "$(write "$k.txt" "$k")" "$(complete "added $k.txt")"
    done
    for k in alpha beta; do exec_entry "$k" 0 "$(write "$k.txt" "$k")" "$(complete "added $k.txt")"; done
} >"$T/s4.jsonl"
start_fake_llm s4 openai "$T/s4.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
goal_with_gate killed "$T/r4" 'true'
step plan
step plan
claim_two
GOALD_FAULT=verify.after_land "$G" job "$R1" --json >"$T/j1.out" 2>"$T/j1.err" &
P1=$!
wait_until 30 grep -q "Your work item $K1:" "$FAKE_LOG"
run "$G" job "$R2" --json; expect_rc 0 "job $K2"
set +e; wait "$P1"; jrc=$?; set -e
expect_eq "$jrc" 137 "the job of $K1 died by SIGKILL after landing"
BR=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
expect_eq "$(git -C "$T/r4" log --format=%s "main..$BR" | wc -l)" 2 "both items' commits on the goal branch"
expect_eq "$(sql "SELECT status FROM work_items WHERE key = '$K1'")" verify "the database does not know $K1 landed"
run "$G" daemon --once
expect_rc 0 "daemon --once after the kill"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "goal 4 completed"
expect_eq "$(git -C "$T/r4" log --format='%(trailers:key=Work-Item-Id,valueonly)' "main..$BR" | grep -c .)" 2 \
    "one commit per item: the retry found its commit on the branch"
expect_eq "$(sql "SELECT head_commit FROM goals WHERE id = '$GID'")" "$(git -C "$T/r4" rev-parse "$BR")" \
    "the database's head is the branch's"

# ---- 5. a job killed halfway through its catch-up ----
db_use catchup
make_repo "$T/r5"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan2)}"
    review_entry
    exec_entry alpha 0 "$(write alpha.txt alpha)" "$(complete "added alpha.txt")"
    exec_entry beta 8000 "$(write beta.txt beta)" "$(complete "added beta.txt")"
    exec_entry beta 0 "$(write beta.txt beta)" "$(complete "added beta.txt")"
} >"$T/s5.jsonl"
start_fake_llm s5 openai "$T/s5.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
goal_with_gate catchup "$T/r5" 'true'
step plan
step plan
claim_two
if [ "$K1" = beta ]; then RB=$R1 RA=$R2; else RB=$R2 RA=$R1; fi
# beta's job waits for its answer while alpha's lands; then beta, brought
# onto alpha's commit, is killed once its branch has moved
GOALD_FAULT=vcs.catch_up.moved "$G" job "$RB" --json >"$T/jb.out" 2>"$T/jb.err" &
PB=$!
wait_until 30 grep -q "Your work item beta:" "$FAKE_LOG"
run "$G" job "$RA" --json; expect_rc 0 "job alpha"
expect_eq "$(status_of "$RA")" success/ "alpha landed"
set +e; wait "$PB"; jrc=$?; set -e
expect_eq "$jrc" 137 "beta's job died by SIGKILL halfway through its catch-up"
expect_eq "$(find "$T" -name '*.catch-up' | wc -l)" 1 "its journal is left"
run "$G" daemon --once
expect_rc 0 "daemon --once after the kill"
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "goal 5 completed"
PATCH=$(sql "SELECT a.path FROM artifacts a JOIN work_items w ON w.id = a.item_id WHERE a.type = 'patch' AND w.key = 'beta'")
[ -n "$PATCH" ] && [ -f "$PATCH" ] || fail "the killed run's changes saved as a patch: [$PATCH]"
grep -q '^+++ b/beta.txt' "$PATCH" || fail "the saved patch holds beta's change: $(cat "$PATCH")"
if grep -q 'alpha.txt' "$PATCH"; then fail "the saved patch undoes alpha's change: $(cat "$PATCH")"; fi
ok
expect_eq "$(find "$T" -name '*.catch-up' | wc -l)" 0 "no journal left"
BR=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
expect_eq "$(git -C "$T/r5" ls-tree --name-only "$BR" | grep -c '^\(alpha\|beta\).txt$')" 2 "both items' files on the head"
expect_eq "$(git -C "$T/r5" log --format=%s "main..$BR" | wc -l)" 2 "one commit per item"

# ---- 6. items running at once land in plan order ----
db_use order
make_repo "$T/r6"
{
    echo "{\"content\": $ELAB}"
    echo "{\"content\": $(plan2)}"
    review_entry
    exec_entry alpha 4000 "$(write alpha.txt alpha)" "$(complete "added alpha.txt")"
    exec_entry beta 0 "$(write beta.txt beta)" "$(complete "added beta.txt")"
} >"$T/s6.jsonl"
start_fake_llm s6 openai "$T/s6.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
goal_with_gate order "$T/r6" 'true'
step plan
step plan
claim_two
if [ "$K1" = alpha ]; then RA=$R1 RB=$R2; else RA=$R2 RB=$R1; fi
"$G" job "$RA" --json >"$T/ja.out" 2>"$T/ja.err" &
PA=$!
wait_until 30 grep -q "Your work item alpha:" "$FAKE_LOG"
# beta's model answers at once; alpha's after 4 s
run "$G" job "$RB" --json; expect_rc 0 "job beta"
wait "$PA" || fail "job alpha exited $?: $(cat "$T/ja.err")"
expect_eq "$(status_of "$RA") $(status_of "$RB")" "success/ success/" "both landed"
BR=$(sql "SELECT branch FROM goals WHERE id = '$GID'")
expect_eq "$(git -C "$T/r6" log --reverse --format='%(trailers:key=Work-Item-Id,valueonly)' "main..$BR" | grep . | tr '\n' ' ')" \
    "$(sql "SELECT id FROM work_items WHERE key = 'alpha'") $(sql "SELECT id FROM work_items WHERE key = 'beta'") " \
    "alpha, first in the plan, landed first"
expect_eq "$(sql "SELECT json_extract(payload, '\$.waited_for') FROM events WHERE type = 'item.land_order' AND run_id = '$RB'")" alpha \
    "beta waited for alpha"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'worktree.caught_up' AND run_id = '$RB'")" 1 \
    "beta was judged on the head that holds alpha"
step work
expect_eq "$(sql "SELECT status FROM goals WHERE id = '$GID'")" completed "goal 6 completed"

# ---- 3. the daemon: three independent items at once ----
db_use daemon
make_repo "$T/r3"
{
    echo "{\"content\": $ELAB}"
    echo '{"content": {"work_items": [{"key": "x", "title": "X", "type": "code", "effort": "S", "depends_on": []}, {"key": "y", "title": "Y", "type": "code", "effort": "S", "depends_on": []}, {"key": "z", "title": "Z", "type": "code", "effort": "S", "depends_on": []}]}}'
    review_entry
    for k in x y z; do exec_entry "$k" 1500 "$(write "$k.txt" "$k")" "$(complete "added $k.txt")"; done
} >"$T/s3.jsonl"
start_fake_llm s3 openai "$T/s3.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_DAEMON_TICK_MS=100
goal_with_gate daemon "$T/r3" 'true'
"$G" daemon --once --log-file "$T/d.log" 2>"$T/daemon.err" || fail "daemon --once exited $?: $(tail -5 "$T/daemon.err")"
ok
expect_eq "$(sql "SELECT status FROM goals")" completed "goal 3 completed"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE kind = 'execute' AND status = 'success'")" 3 "three execute runs, each landed"
expect_eq "$(sql "SELECT count(*) FROM runs WHERE status <> 'success'")" 0 \
    "no run failed: $(sql "SELECT kind || ' ' || status || ': ' || ifnull(failure_reason, '') FROM runs WHERE status <> 'success'")"
expect_eq "$(sql "SELECT coalesce(max(c), 0) FROM (SELECT (SELECT count(*) FROM runs s WHERE s.kind = 'execute'
                  AND s.started_at <= r.started_at AND r.started_at < s.ended_at) AS c
                  FROM runs r WHERE r.kind = 'execute') AS q")" 3 "the three items ran at once"
BR=$(sql "SELECT branch FROM goals")
expect_eq "$(git -C "$T/r3" ls-tree --name-only "$BR" | grep -c '^[xyz].txt$')" 3 "every item's file on the head"
expect_eq "$(git -C "$T/r3" branch --list "$BR-item-*" | wc -l)" 0 "no item branch left"
expect_eq "$(ls "$T/wt" | grep -c items || true)" 0 "no item worktree left"
done_tests
