#!/usr/bin/env bash
# bench_warm.sh BUILD_DIR [FILES] [RUNS] - what warm build folders save:
# the wall time of each unit of a goal of two items whose gate builds a C
# project of FILES files (default 60, about 60 ms each with cc -O2) with
# a make-like rule (compile a .c whose object is missing or older), links
# and runs it; the same goal with the gate declaring "build_dirs":
# ["build"] (warm) and without (cold, as every gate ran before).
#
# The model is goald's script model (instant): item 1 runs the gates,
# fixes one file, runs them again and completes; item 2 changes another
# file, runs the gates and completes; then the publish (the final check,
# always cold).  Units are run one at a time (`goald claim`, `goald
# job`), GOALD_SANDBOX=none.  Each figure is the median of RUNS (default
# 3) runs; the compiles of every gate run are counted from the gate's own
# log.  Results go in bench/RESULTS.md ("## Warm build folders").
set -euo pipefail
B=$(realpath "${1:?usage: bench_warm.sh BUILD_DIR [FILES] [RUNS]}")
G=$B/goald
N=${2:-60}
RUNS=${3:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-warm.XXXXXX")
trap '[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT
unset GOALD_CONFIG GOALD_LLM_PROVIDER GOALD_LLM_BASE_URL GOALD_LLM_API_KEY
export GOALD_SANDBOX=none GOALD_LLM_PROVIDER=script

now_ms() { date +%s%3N; }
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

BUILD='#!/bin/sh
n=0
mkdir -p build
for c in src/*.c; do
    o=build/$(basename "$c" .c).o
    if [ ! -e "$o" ] || [ "$c" -nt "$o" ]; then
        cc -O2 -c "$c" -o "$o" || exit 1
        n=$((n + 1))
    fi
done
cc -o build/prog build/*.o && ./build/prog
r=$?
echo "$n $r" >>"$LOG"
exit $r
'
# project DIR: FILES small C files, a main that calls them all; f01
# returns a wrong value (item 1 fixes it)
project() {
    local i
    mkdir -p "$1/src"
    printf '%s' "$BUILD" >"$1/build.sh"
    for i in $(seq -w 1 "$N"); do
        cat >"$1/src/f$i.c" <<EOF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int f$i(int n)
{
    int v[64];
    char buf[128];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 7919 + n + $((10#$i))) % 101;
    qsort(v, 64, sizeof(int), cmp);
    snprintf(buf, sizeof buf, "%d", v[n % 64]);
    return 1;
}
EOF
    done
    sed -i 's/return 1;/return 0;/' "$1/src/f$(seq -w 1 "$N" | head -1).c"
    {
        for i in $(seq -w 1 "$N"); do echo "int f$i(int);"; done
        echo 'int main(void) { int s = 0;'
        for i in $(seq -w 1 "$N"); do echo "s += f$i(3);"; done
        echo "return s == $((10#$N)) ? 0 : 1; }"
    } >"$1/src/main.c"
    git -C "$1" init -q -b main
    git -C "$1" add -A
    git -C "$1" -c user.email=b@e -c user.name=b commit -q -m project
}

edit() { jq -nc --arg p "$1" --arg o "$2" --arg n "$3" '{name: "edit", arguments: {path: $p, old_text: $o, new_text: $n}}'; }
script() {
    local first last gates elab
    first=$(seq -w 1 "$N" | head -1)
    last=$(seq -w 1 "$N" | tail -1)
    gates='{"name": "run_gates", "arguments": {}}'
    elab='{"components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash", "run_gates"], "verification": []}'
    echo "{\"stage\": \"elaborate\", \"content\": $elab}"
    echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Fix f", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Tidy f", "type": "code", "effort": "S", "critical": false, "depends_on": ["wi-1"]}]}}'
    echo "{\"stage\": \"execute\", \"tool_calls\": [$gates, $(edit "src/f$first.c" 'return 0;' 'return 1;'), $gates, {\"name\": \"complete\", \"arguments\": {\"summary\": \"fixed\"}}]}"
    echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}}'
    echo "{\"stage\": \"execute\", \"tool_calls\": [$(edit "src/f$last.c" 'char buf[128];' 'char buf[256];'), $gates, {\"name\": \"complete\", \"arguments\": {\"summary\": \"tidied\"}}]}"
    echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}}'
}

# unit LANE: claim and run one unit; prints its wall time in ms
unit() {
    local run t0 t1
    run=$("$G" claim --lane "$1" --json | jq -r .run_id)
    t0=$(now_ms)
    "$G" job "$run" --json >"$D/job.json"
    t1=$(now_ms)
    [ "$(jq -r .status "$D/job.json")" = success ] || {
        echo "unit $1 failed: $(cat "$D/job.json")" >&2
        exit 1
    }
    echo $((t1 - t0))
}

# one_run KIND K: prints "item1_ms item2_ms publish_ms compiles"
one_run() {
    local kind=$1 dirs
    D="$W/$kind-$2"
    mkdir -p "$D/home"
    export HOME="$D/home" XDG_STATE_HOME="$D/state" XDG_CONFIG_HOME="$D/config"
    export GOALD_DB="$D/goald.db" LOG="$D/compiles.log" GOALD_LLM_SCRIPT="$D/s.jsonl"
    project "$D/repo"
    script >"$D/s.jsonl"
    dirs=''
    [ "$kind" = warm ] && dirs=', build_dirs: ["build"]'
    jq -nc --arg r "$D/repo" --arg c "LOG=$LOG sh build.sh" \
        "{title: \"bench\", repo: \$r, base_branch: \"main\", verification: [{name: \"build\", type: \"test\", command: \$c, must_pass: true, timeout_s: 600$dirs}]}" >"$D/goal.json"
    "$G" submit "$D/goal.json" >/dev/null
    unit plan >/dev/null
    unit plan >/dev/null
    echo "$(unit work) $(unit work) $(unit work) $(awk '{ s += $1 } END { print s }' "$LOG")"
}

for k in $(seq 1 "$RUNS"); do
    for kind in cold warm; do
        one_run "$kind" "$k" >>"$W/$kind.txt"
    done
done
echo "files: $N, runs: $RUNS (medians, ms)"
printf '%-5s %9s %9s %9s %9s %9s\n' kind item1 item2 publish total compiles
for kind in cold warm; do
    f="$W/$kind.txt"
    i1=$(cut -d' ' -f1 "$f" | median)
    i2=$(cut -d' ' -f2 "$f" | median)
    p=$(cut -d' ' -f3 "$f" | median)
    tot=$(awk '{ print $1 + $2 + $3 }' "$f" | median)
    c=$(cut -d' ' -f4 "$f" | median)
    printf '%-5s %9s %9s %9s %9s %9s\n' "$kind" "$i1" "$i2" "$p" "$tot" "$c"
done
