#!/usr/bin/env bash
# bench_parallel.sh BUILD_DIR [RUNS] [GOALD_BINARY_BEFORE] - the wall time
# of one goal of three independent items with a model that answers every
# call after 2 s (BENCH_MODEL_MS), from the daemon's start to the goal's
# completion.
#
# The goal: local repository, the gate `ls item-*.txt`, no publishing.
# The model: tests/fakes/fake_llm of BUILD_DIR (OpenAI protocol on
# loopback, each answer held back BENCH_MODEL_MS; an item's answers are
# matched to it by its key, so items running at once each get their own):
# elaboration, a plan of three items with no dependencies, then for each
# item three calls (look at the repository, write a file of its own with
# bash, complete) and a review: 2 + 3 x 4 = 14 calls.  Each item writes a
# file of its own, so the items never conflict.  The default lanes (plan 1,
# work 3).
#
# RUNS runs (default 3) of BUILD_DIR/goald and, when given, of the binary
# before items ran side by side, alternating; the medians and the ratio
# before / after.  Results go in bench/RESULTS.md ("## Items side by side").
set -euo pipefail
B=$(realpath "${1:?usage: bench_parallel.sh BUILD_DIR [RUNS] [GOALD_BINARY_BEFORE]}")
AFTER=$B/goald
FAKE=$B/tests/fake_llm
RUNS=${2:-3}
BEFORE=${3:+$(realpath "$3")}
MS=${BENCH_MODEL_MS:-2000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-par.XXXXXX")
trap 'for p in ${DPID:-} ${FPID:-}; do kill -KILL "$p" 2>/dev/null; done; [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT
# shellcheck source=bench/lib.sh
. "$SRC/bench/lib.sh"
unset GOALD_CONFIG GOALD_LLM_API_KEY GOALD_LLM_MODELS
export GOALD_LLM_PROVIDER=openai GOALD_LLM_MODEL=m1 GOALD_DAEMON_TICK_MS=200

script() {
    local k call
    echo '{"hang_ms":'"$MS"',"content":{"components":["item files"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["ls","read","edit","bash"],"verification":[]}}'
    echo '{"hang_ms":'"$MS"',"content":{"work_items":[{"key":"wi-1","title":"item 1","description":"add a file of its own","type":"code","effort":"S","depends_on":[]},{"key":"wi-2","title":"item 2","description":"add a file of its own","type":"code","effort":"S","depends_on":[]},{"key":"wi-3","title":"item 3","description":"add a file of its own","type":"code","effort":"S","depends_on":[]}]}}'
    echo '{"match":"goald'"'"'s review stage","repeat":0,"hang_ms":'"$MS"',"content":{"verdict":"pass","findings":[]}}'
    # each item: a look, a file of its own (named by the time), done
    call='{"name":"bash","arguments":{"command":"f=item-$(date +%s%N).txt; echo x > $f"}}'
    for k in 1 2 3; do
        echo '{"match":"Your work item wi-'"$k"':","hang_ms":'"$MS"',"tool_calls":[{"name":"ls","arguments":{"path":"."}}]}'
        echo '{"match":"Your work item wi-'"$k"':","hang_ms":'"$MS"',"tool_calls":['"$call"']}'
        echo '{"match":"Your work item wi-'"$k"':","hang_ms":'"$MS"',"tool_calls":[{"name":"complete","arguments":{"summary":"added a file of its own"}}]}'
    done
}

now_ms() { date +%s%3N; }
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# one_run GOALD LABEL K: a fresh state folder, the goal, the daemon until
# the goal completed; prints the wall time in ms
one_run() {
    local g=$1 d="$W/$2-$3" t0 t1 st
    mkdir -p "$d/home"
    export HOME="$d/home" XDG_STATE_HOME="$d/state" XDG_CONFIG_HOME="$d/config"
    export GOALD_DB="$d/goald.db"
    script >"$d/s.jsonl"
    "$FAKE" --port-file "$d/port" --mode openai --script "$d/s.jsonl" --log "$d/llm.log" 2>"$d/fake.err" &
    FPID=$!
    for _ in $(seq 1 200); do [ -s "$d/port" ] && break; sleep 0.05; done
    export GOALD_LLM_BASE_URL="http://127.0.0.1:$(cat "$d/port")/v1"
    mkdir -p "$d/r"
    git -C "$d/r" init -q -b main
    echo bench >"$d/r/README"
    git -C "$d/r" add README
    git -C "$d/r" -c user.email=b@example.com -c user.name=b commit -q -m init
    jq -n --arg repo "$d/r" '{title: "three independent items", repo: $repo, base_branch: "main",
        success_criteria: ["the gate passes"],
        verification: [{name: "files", type: "test", command: "ls item-*.txt", must_pass: true}],
        publish: {push: false, pull_request: false}}' >"$d/goal.json"
    "$g" submit "$d/goal.json" >/dev/null
    W=$d
    t0=$(now_ms)
    bench_start_daemon "$g"
    for _ in $(seq 1 1200); do
        st=$("$g" goals --json 2>/dev/null | jq -r '.[0].status')
        case $st in completed | blocked | cancelled) break ;; esac
        sleep 0.1
    done
    t1=$(now_ms)
    kill -TERM "$DPID" 2>/dev/null
    wait "$DPID" 2>/dev/null || true
    kill -TERM "$FPID" 2>/dev/null
    wait "$FPID" 2>/dev/null || true
    [ "$st" = completed ] || { echo "bench_parallel: the goal ended $st ($2 run $3)" >&2; exit 1; }
    echo $((t1 - t0))
}

SAVE_W=$W
echo "model ${MS} ms a call; $RUNS runs each; load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$SAVE_W/after.ms"
: >"$SAVE_W/before.ms"
for k in $(seq 1 "$RUNS"); do
    if [ -n "$BEFORE" ]; then
        ms=$(one_run "$BEFORE" before "$k")
        W=$SAVE_W
        echo "$ms" >>"$SAVE_W/before.ms"
        echo "before run $k: $ms ms"
    fi
    ms=$(one_run "$AFTER" after "$k")
    W=$SAVE_W
    echo "$ms" >>"$SAVE_W/after.ms"
    echo "after  run $k: $ms ms"
done
A=$(median <"$SAVE_W/after.ms")
echo "after: median $A ms"
if [ -n "$BEFORE" ]; then
    B=$(median <"$SAVE_W/before.ms")
    echo "before: median $B ms"
    awk -v a="$A" -v b="$B" 'BEGIN {printf "ratio before/after: %.2fx\n", b / a}'
fi
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
