#!/usr/bin/env bash
# Warm build folders: a gate that declares "build_dirs" keeps the build
# its first run on the goal's start made (the trusted tree), and every
# later run gets a copy of it, with the start's files old and every other
# file new, so an incremental build rebuilds only what changed; the final
# check builds from nothing.
#
# The gate (build.sh) compiles each src/*.c whose object is missing or
# older than it (by modification time, as make does), links, runs the
# program, and logs "TAG COMPILED EXIT" outside the tree (GOALD_SANDBOX=
# none lets it), TAG a checksum of the tree's sources.
#
#  1. a warm run is warm: the model runs the gates on the start (all four
#     files compiled, the build kept), fixes one file and runs them again
#     (one compiled); verification on the item's tree compiles one, the
#     baseline on the start none; the final check compiles all four;
#  2. a build folder the trusted run replaced by a link (to a folder
#     outside) is not kept: nothing is moved or written through it;
#  3. build_dirs naming "../x", ".git/x", "/abs" is refused at submit with
#     the field named; "build" is accepted;
#  4. a gate the model's elaboration proposes with build_dirs ["../x"] is
#     refused, the field named;
#  5. part 1 in the sandbox (bubblewrap): warm verification, cold final;
#  6. gates.warm_max_mb 0: nothing kept, every run cold;
#  7. no run on the start before the item changed anything (the model
#     never ran the gates): verification's first run makes the warm folder
#     by a run on the start first, and builds the item's tree warm.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_SANDBOX=none GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1
export GOALD_CONTROL_MAX_RETRIES=1
LOG="$T/runs.log"
: >"$LOG"
ELAB='{"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
# the verification plan: build.sh, build/ declared
verif() { jq -nc --arg c "LOG=$LOG sh build.sh" '[{name: "build", type: "test", command: $c, must_pass: true, build_dirs: ["build"]}]'; }
BUILD='#!/bin/sh
# compile what is older than its source, link, run
TAG=$(cat src/*.c | cksum | cut -d" " -f1)
n=0
mkdir -p build
for c in src/*.c; do
    o=build/$(basename "$c" .c).o
    if [ ! -e "$o" ] || [ "$c" -nt "$o" ]; then
        cc -c "$c" -o "$o" || exit 1
        n=$((n + 1))
    fi
done
cc -o build/prog build/*.o && ./build/prog
r=$?
echo "$TAG $n $r" >>"$LOG"
exit $r
'
# c_repo DIR B: a C project of four files whose b() returns B (3 passes)
c_repo() {
    make_repo "$1"
    mkdir -p "$1/src"
    printf '%s' "$BUILD" >"$1/build.sh"
    echo 'int a(void) { return 1; }' >"$1/src/a.c"
    echo "int b(void) { return $2; }" >"$1/src/b.c"
    echo 'int c(void) { return 1; }' >"$1/src/c.c"
    printf 'int a(void); int b(void); int c(void);\nint main(void) { return a() + b() + c() == 5 ? 0 : 1; }\n' >"$1/src/main.c"
    git -C "$1" add -A && git -C "$1" commit -q -m "c project"
}
# tag REPO REV: the tag build.sh logs for the tree of REV
tag() { for f in a b c main; do git -C "$1" show "$2:src/$f.c"; done | cksum | cut -d' ' -f1; }
# runs TAG: "compiled exit" of each run on the tree tagged TAG, one a line
runs() { awk -v t="$1" '$1 == t { print $2 " " $3 }' "$LOG"; }

# --- 1. a warm run is warm --------------------------------------------------
R="$T/one"
c_repo "$R" 2
START=$(tag "$R" main)
FIX=$(edit_call src/b.c 'return 2;' 'return 3;')
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix b")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$GATES, $FIX, $GATES, $(complete "b fixed")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/one.jsonl"
export GOALD_LLM_SCRIPT="$T/one.jsonl"
submit_fresh one "$R" ", \"verification\": $(verif)"
step plan; step plan; step work
[ "$(jqo .status)" = success ] || fail "the item: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
ITEM=$(tag "$R" "$(sql "SELECT commit_sha FROM work_items WHERE key = 'wi-1'")")
# the start: the model's first run_gates (trusted: all four compiled, its
# build kept), then the baseline twice (it fails: run again), warm: none
expect_eq "$(runs "$START" | tr '\n' ,)" "4 1,0 1,0 1," "runs on the start: compiled, exit"
# the item's tree: the model's second run_gates and verification, warm
expect_eq "$(runs "$ITEM" | tr '\n' ,)" "1 0,1 0," "runs on the item's tree: only b.c compiled"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.build_kept'")" 1 "the build kept once"
expect_eq "$(sql "SELECT json_extract(payload, '\$.kept[0]') FROM events WHERE type = 'gate.build_kept'")" build \
    "build/ kept"
KEPT=$(find "$T/goals/$GID/builds" -name d0 -type d | wc -l)
expect_eq "$KEPT" 1 "one warm folder, its build folder d0 in it"
step work
expect_eq "$(jqo .status)" success "publish"
# the final check on the head (the item's tree) runs cold: all four
expect_eq "$(runs "$ITEM" | tr '\n' ,)" "1 0,1 0,4 0," "the final check compiled everything"
expect_eq "$(sql "SELECT data FROM decisions WHERE kind = 'final_check'" | jq -r '.gates[0].reused_from_run')" null \
    "a warm pass does not stand for the final check"
[ ! -e "$T/goals/$GID/builds" ] || fail "the goal ended: its build folders are removed"
ok

# --- 2. a build folder replaced by a link is not kept -------------------------
: >"$LOG"
R="$T/two"
c_repo "$R" 2
OUTSIDE="$T/outside"
mkdir -p "$OUTSIDE"
echo canary >"$OUTSIDE/canary"
# the start's build.sh leaves build/ a link to the folder outside
printf '%s\nrm -rf build; ln -s %s build\n' "$(sed '$d' "$R/build.sh")" "$OUTSIDE" >"$R/build.sh"
echo 'exit $r' >>"$R/build.sh"
git -C "$R" commit -qam "build/ ends as a link"
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix b")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$GATES, $FIX, $(complete "b fixed")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/two.jsonl"
export GOALD_LLM_SCRIPT="$T/two.jsonl"
submit_fresh two "$R" ", \"verification\": $(verif)"
step plan; step plan; step work
ev=$(sql "SELECT payload FROM events WHERE type = 'gate.build_kept'")
expect_eq "$(printf '%s' "$ev" | jq -c '[.kept, .skipped]')" '[[],["build"]]' "the link is not kept"
expect_eq "$(find "$T/goals/$GID/builds" -mindepth 3 | wc -l)" 1 "the warm folder made"
expect_eq "$(find "$T/goals/$GID/builds" \( -type l -o -name d0 \) | wc -l)" 0 "no link, no d0 in it"
expect_eq "$(ls -A "$OUTSIDE" | tr '\n' ,)" "canary," "the folder outside: as it was"
expect_eq "$(cat "$OUTSIDE/canary")" canary "its file untouched"
# the runs after it get nothing: they compile everything
expect_eq "$(awk '{ printf "%s %s,", $2, $3 }' "$LOG")" "4 1,4 0,4 1,4 1," \
    "the trusted run, the item's, the baseline's two: each compiled everything"

# --- 3. build_dirs are checked at submit -------------------------------------
db_use three
for case in '../x|a ".." component' '.git/x|a ".git" component' '/abs|an absolute path' \
    'a/../b|a ".." component' 'build/.GIT|a ".git" component' 'x//y|an empty component'; do
    bad=${case%%|*}
    jq -nc --arg r "$R" --arg d "$bad" '{title: "t", repo: $r, base_branch: "main", verification: [{name: "b", command: "true", build_dirs: ["ok", $d]}]}' >"$T/bad.json"
    run "$G" submit "$T/bad.json"
    expect_rc 2 "build_dirs [ok, $bad]"
    expect_err "verification[0].build_dirs[1]: ${case#*|}"
done
jq -nc --arg r "$R" '{title: "t", repo: $r, base_branch: "main", verification: [{name: "b", command: "true", build_dirs: ["a", "b", "c", "d", "e"]}]}' >"$T/many.json"
run "$G" submit "$T/many.json"
expect_rc 2 "five build folders"
expect_err "verification[0].build_dirs: at most 4"
jq -nc --arg r "$R" '{title: "t", repo: $r, base_branch: "main", verification: [{name: "b", command: "true", build_dirs: ["out", "out/obj"]}]}' >"$T/nested.json"
run "$G" submit "$T/nested.json"
expect_rc 2 "one inside another"
expect_err "verification[0].build_dirs[1]: the same as or inside another"
jq -nc --arg r "$R" '{title: "t", repo: $r, base_branch: "main", verification: [{name: "b", command: "true", build_dirs: ["build", "out/obj"]}]}' >"$T/good.json"
run "$G" submit "$T/good.json"
expect_rc 0 "build_dirs [build, out/obj]"
# the model's elaboration: a gate it proposes with a bad build folder is
# not taken
BADELAB='{"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "edit", "run_gates"], "verification": [{"name": "b", "command": "sh build.sh", "build_dirs": ["../x"]}]}'
echo "{\"stage\": \"elaborate\", \"content\": $BADELAB}" >"$T/four.jsonl"
export GOALD_LLM_SCRIPT="$T/four.jsonl"
submit_fresh four "$R"
step plan
expect_eq "$(sql "SELECT count(*) FROM goals WHERE verification LIKE '%../x%'")" 0 "not the goal's plan"
why=$(sql "SELECT group_concat(failure_reason, ' ') FROM runs")$(sql "SELECT group_concat(payload, ' ') FROM events")
case "$why" in *'verification[0].build_dirs[0]: a \".\." component'*|*'verification[0].build_dirs[0]: a ".." component'*) ok ;;
*) fail "the elaboration's refusal names the field: $why" ;; esac
# --- 6. gates.warm_max_mb 0: nothing kept, every run cold --------------------
: >"$LOG"
R="$T/six"
c_repo "$R" 2
START=$(tag "$R" main)
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix b")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$GATES, $FIX, $GATES, $(complete "b fixed")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/six.jsonl"
export GOALD_LLM_SCRIPT="$T/six.jsonl"
echo '{"gates": {"warm_max_mb": 0}}' >"$T/cold.json"
export GOALD_CONFIG="$T/cold.json"
submit_fresh six "$R" ", \"verification\": $(verif)"
step plan; step plan; step work
[ "$(jqo .status)" = success ] || fail "cold: the item: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
unset GOALD_CONFIG
ITEM=$(tag "$R" "$(sql "SELECT commit_sha FROM work_items WHERE key = 'wi-1'")")
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.build_kept'")" 0 "cold: nothing kept"
expect_eq "$(runs "$ITEM" | head -1)" "4 0" "cold: the item's tree built from nothing"
[ ! -e "$T/goals/$GID/builds" ] || fail "cold: no build folder made"
ok

# --- 7. the warm folder made on the start first, when no run made it ---------
: >"$LOG"
R="$T/seven"
c_repo "$R" 2
START=$(tag "$R" main)
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix b")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$FIX, $(complete "b fixed")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/seven.jsonl"
export GOALD_LLM_SCRIPT="$T/seven.jsonl"
submit_fresh seven "$R" ", \"verification\": $(verif)"
step plan; step plan; step work
[ "$(jqo .status)" = success ] || fail "primed: the item: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
ITEM=$(tag "$R" "$(sql "SELECT commit_sha FROM work_items WHERE key = 'wi-1'")")
expect_eq "$(runs "$START" | head -1)" "4 1" "primed: the start built from nothing first (it fails: b is wrong there)"
expect_eq "$(runs "$ITEM" | tr '\n' ,)" "1 0," "primed: the item's tree built warm: only b.c compiled"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.completed' AND run_id = '$RUN'")" 1 \
    "primed: the start run is not one of the item's gate.completed (as a baseline's is not)"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'gate.build_kept'")" 1 "primed: the build kept once"

# --- 5. the same in the sandbox -----------------------------------------------
# bubblewrap (as root: the copy given to the sandbox user): the gate prints
# what it compiled instead of logging it outside the tree
R="$T/five"
c_repo "$R" 2
sed -i 's/^echo "$TAG $n $r" >>"$LOG"$/echo "COMPILED $n EXIT $r"/' "$R/build.sh"
git -C "$R" commit -qam "print, not log"
{
    echo "{\"stage\": \"elaborate\", \"content\": $ELAB}"
    echo "{\"stage\": \"plan\", \"content\": $(plan1 "Fix b")}"
    echo "{\"stage\": \"execute\", \"tool_calls\": [$GATES, $FIX, $GATES, $(complete "b fixed")]}"
    echo "{\"stage\": \"review\", \"content\": $REVIEW}"
} >"$T/five.jsonl"
export GOALD_LLM_SCRIPT="$T/five.jsonl"
submit_fresh five "$R" ", \"verification\": $(jq -nc '[{name: "build", type: "test", command: "sh build.sh", must_pass: true, build_dirs: ["build"]}]')"
GOALD_SANDBOX=bwrap step plan; GOALD_SANDBOX=bwrap step plan; GOALD_SANDBOX=bwrap step work
[ "$(jqo .status)" = success ] || fail "bwrap: the item: $(sql "SELECT failure_reason FROM runs WHERE id = '$RUN'")"
GOALD_SANDBOX=bwrap step work
expect_eq "$(jqo .status)" success "bwrap: publish"
# verification on the item's tree (warm), then the final check (cold)
expect_eq "$(sql "SELECT output_tail FROM gate_results ORDER BY id" | grep -a '^COMPILED' | tr '\n' ,)" \
    "COMPILED 1 EXIT 0,COMPILED 4 EXIT 0," "bwrap: warm verification, cold final check"
expect_eq "$(sql "SELECT json_extract(payload, '\$.kept[0]') FROM events WHERE type = 'gate.build_kept'")" build \
    "bwrap: build/ kept"
done_tests
