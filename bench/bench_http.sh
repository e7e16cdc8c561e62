#!/usr/bin/env bash
# bench_http.sh GOALD_BINARY [BENCH_SSE] - the HTTP API's figures,
# with the real daemon working 50 goals while they are taken:
#   1. GET /v1/goals/{id} (the report) under Debian's wrk on loopback:
#      `wrk -t2 -c32 -d${WRK_SECONDS}s --latency`, RUNS times (default 3):
#      requests/s and p50/p99 latency, the median of the runs; a run with
#      any non-2xx answer or socket error fails the bench (a few answers are
#      also checked by hand: 200 and the goal's own report);
#   2. the event stream's fan-out: bench/bench_sse (BENCH_SSE, default
#      next to GOALD_BINARY in bench/) holds SSE_CLIENTS (default 100)
#      clients on GET /v1/events for SSE_SECONDS (default 30): connected,
#      stayed, events lost and repeated per client, and the fan-out latency
#      (first client's receipt to the last's) median and p99 over events;
#      with the CPU time of the daemon (its jobs apart) and of the server.
# The model is the script provider (docs/llm.md): lines keyed by stage, so
# 50 goals worked at once each get the answer of their stage, and each
# answer waits (sleep_ms) like a real model, so that the goals are still
# being worked at the end.  `goald serve` runs apart from the daemon (same
# database), so that their CPU times are told apart; config raises
# http.max_connections to 256 (the default 64 would refuse the SSE clients:
# a thread each), http.streams_per_token to 256 (its streams share one
# token) and http.rate_limit_per_min to 1000000 (else wrk would
# measure 429s).  Numbers on stdout; recorded in bench/RESULTS.md ("HTTP API").
set -euo pipefail
G=${1:?usage: bench_http.sh GOALD_BINARY [BENCH_SSE]}
SSE=${2:-$(dirname "$G")/bench/bench_sse}
GOALS=${GOALS:-50}
RUNS=${RUNS:-3}
WRK_SECONDS=${WRK_SECONDS:-20}
SSE_CLIENTS=${SSE_CLIENTS:-100}
SSE_SECONDS=${SSE_SECONDS:-30}
command -v wrk >/dev/null || { echo "bench_http: wrk is needed (scripts/install-deps)" >&2; exit 1; }
[ -x "$SSE" ] || { echo "bench_http: $SSE: not built (cmake --build B --target bench_sse)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/goald-bench-http.XXXXXX")
stop_all() {
    [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
    [ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$W"
}
trap stop_all EXIT
export GOALD_DB="$W/goald.db" HOME="$W/home" XDG_STATE_HOME="$W/state" XDG_CONFIG_HOME="$W/config"
export GOALD_LLM_PROVIDER=script GOALD_LLM_SCRIPT="$W/s.jsonl" GOALD_CONFIG="$W/config.json"
unset GOALD_LLM_BASE_URL GOALD_LLM_MODEL GOALD_LLM_API_KEY GOALD_LLM_MODELS
mkdir -p "$HOME"
sql() { sqlite3 -cmd ".timeout 5000" "$GOALD_DB" "$1"; }
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }          # utime + stime
child_ticks() { awk '{print $16 + $17}' "/proc/$1/stat"; }    # its waited children (the jobs)
hz=$(getconf CLK_TCK)
working() { # what the daemon is doing now, one line
    sql "SELECT 'goals: ' || (SELECT count(*) FROM goals WHERE status NOT IN ('completed','cancelled','failed'))
           || ' open, ' || (SELECT count(*) FROM goals WHERE status = 'completed') || ' completed; jobs running: '
           || (SELECT count(*) FROM runs WHERE status = 'running') || '; events: ' || (SELECT ifnull(max(id), 0) FROM events)"
}
open_goals() { sql "SELECT count(*) FROM goals WHERE status NOT IN ('completed','cancelled','failed')"; }

jq -n '{http: {max_connections: 256, streams_per_token: 256, rate_limit_per_min: 1000000},
        daemon: {plan_cap: 8, work_cap: 8}}' >"$GOALD_CONFIG"
# one line per stage and goal, each answered after a model-like wait
{
    for _ in $(seq 1 $((GOALS + 2))); do
        echo '{"stage":"elaborate","sleep_ms":10000,"content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["the gate passes"],"allowed_actions":["read","edit"],"verification":[]}}'
        echo '{"stage":"plan","sleep_ms":10000,"content":{"work_items":[{"key":"wi-1","title":"make add.sh add","type":"code","effort":"S","depends_on":[]}]}}'
        echo '{"stage":"execute","sleep_ms":10000,"tool_calls":[{"name":"edit","arguments":{"path":"add.sh","old_text":"$(($1 - $2))","new_text":"$(($1 + $2))"}},{"name":"complete","arguments":{"summary":"add.sh adds"}}]}'
        echo '{"stage":"review","sleep_ms":5000,"content":{"verdict":"pass","findings":[]}}'
    done
} >"$GOALD_LLM_SCRIPT"
. "$(dirname "$0")/lib.sh"
for i in $(seq 1 "$GOALS"); do bench_make_goal "$W" "$i"; done

echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$G" migrate >/dev/null
bench_start_daemon "$G"
for i in $(seq 1 "$GOALS"); do "$G" submit "$W/goal$i.json" | tail -n1 >>"$W/ids"; done
"$G" serve --listen 127.0.0.1:0 >"$W/serve.out" 2>"$W/serve.err" &
SPID=$!
for _ in $(seq 1 200); do grep -qs "^goald: serving " "$W/serve.out" && break; sleep 0.05; done
URL=$(awk '/^goald: serving / {print $3; exit}' "$W/serve.out")
[ -n "$URL" ] || { echo "bench_http: goald serve did not start: $(cat "$W/serve.err")" >&2; exit 1; }
TOK=$("$G" token create --scope read --name bench 2>/dev/null)
# the first goal, once planned: a report with its work item, while it is worked
ID=$(head -n1 "$W/ids")
for _ in $(seq 1 600); do [ "$(sql "SELECT count(*) FROM work_items WHERE goal_id = '$ID'")" -gt 0 ] && break; sleep 0.1; done
echo "daemon working $GOALS goals (plan_cap 8, work_cap 8; the model answers after 5-10 s); $(working)"

check_answers() { # a few answers by hand: 200 and this goal's report
    local n code
    for n in 1 2 3 4 5; do
        code=$(curl -s -o "$W/answer.json" -w '%{http_code}' -H "Authorization: Bearer $TOK" "$URL/v1/goals/$ID")
        [ "$code" = 200 ] && jq -e --arg id "$ID" '.goal.id == $id and (.work_items | type) == "array"' \
            "$W/answer.json" >/dev/null || {
            echo "bench_http: GET /v1/goals/$ID answered $code: $(head -c 300 "$W/answer.json")" >&2
            exit 1
        }
    done
}
to_ms() { # wrk's "12.34ms" / "567.00us" / "1.02s" in ms
    awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}

# 1. GET /v1/goals/{id} under wrk
check_answers
echo "goal $ID: $(jq -r '.goal.status' "$W/answer.json"), $(jq '.work_items | length' "$W/answer.json") work item(s); report $(wc -c <"$W/answer.json") bytes"
: >"$W/wrk.results"
for run in $(seq 1 "$RUNS"); do
    # a token per run: the rate limit counts per token and minute, and its
    # largest setting (1000000) is under three fast runs in one minute
    RTOK=$("$G" token create --scope read --name "bench$run" 2>/dev/null)
    s0=$(ticks "$SPID")
    wrk -t2 -c32 -d"${WRK_SECONDS}s" --latency -H "Authorization: Bearer $RTOK" "$URL/v1/goals/$ID" >"$W/wrk$run.out"
    s1=$(ticks "$SPID")
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$W/wrk$run.out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$W/wrk$run.out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$W/wrk$run.out")")
    total=$(awk '/requests in/ {print $1}' "$W/wrk$run.out")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $4}' "$W/wrk$run.out")
    sockerr=$(awk '/Socket errors:/ {print $0}' "$W/wrk$run.out")
    if [ -n "$non2xx" ] || [ -n "$sockerr" ] || [ -z "$rps" ]; then
        cat "$W/wrk$run.out" >&2
        echo "bench_http: run $run: non-2xx answers (${non2xx:-0}) or socket errors: the figures would not be of the report" >&2
        exit 1
    fi
    check_answers
    cpu=$(awk -v c=$((s1 - s0)) -v hz="$hz" -v s="$WRK_SECONDS" 'BEGIN {printf "%.0f", 100 * c / hz / s}')
    echo "wrk run $run: $rps requests/s ($total requests), p50 $p50 ms, p99 $p99 ms; server CPU ${cpu}%; $(working)"
    echo "$rps $p50 $p99" >>"$W/wrk.results"
    [ "$(open_goals)" -gt 0 ] || echo "bench_http: warning: every goal ended during run $run: the daemon was not working all along" >&2
done
echo "GET /v1/goals/{id}, median of $RUNS runs: $(awk '{print $1}' "$W/wrk.results" | median) requests/s," \
    "p50 $(awk '{print $2}' "$W/wrk.results" | median) ms, p99 $(awk '{print $3}' "$W/wrk.results" | median) ms"

# 2. SSE fan-out
d0=$(ticks "$DPID"); j0=$(child_ticks "$DPID"); s0=$(ticks "$SPID"); e0=$(sql "SELECT ifnull(max(id), 0) FROM events")
t0=$(date +%s%3N)
"$SSE" "${URL##*:}" "$TOK" "$GOALD_DB" "$SSE_CLIENTS" "$SSE_SECONDS" >"$W/sse.out"
d1=$(ticks "$DPID"); j1=$(child_ticks "$DPID"); s1=$(ticks "$SPID"); e1=$(sql "SELECT ifnull(max(id), 0) FROM events")
t1=$(date +%s%3N)
v() { awk -F= -v k="$1" '$1 == k {print $2}' "$W/sse.out"; }
pct() { awk -v c="$1" -v hz="$hz" -v ms=$((t1 - t0)) 'BEGIN {printf "%.1f", 100 * c / hz / (ms / 1000)}'; }
echo "SSE, $(v clients) clients for ${SSE_SECONDS} s: connected $(v connected), stayed $(v stayed);" \
    "events $(v events) (ids $(v start_id)..$(v end_id), $((e1 - e0)) written meanwhile);" \
    "lost $(v lost), repeated $(v repeated) (clients with a loss: $(v clients_with_loss))"
echo "SSE fan-out latency (first client -> last client) over $(v fanout_n) events:" \
    "median $(v fanout_median_ms) ms, p99 $(v fanout_p99_ms) ms, max $(v fanout_max_ms) ms;" \
    "event written -> last client: median $(v ts_to_last_median_ms) ms, p99 $(v ts_to_last_p99_ms) ms"
echo "CPU during the fan-out (% of one CPU over its $((t1 - t0)) ms, connecting and draining included):" \
    "server $(pct $((s1 - s0)))%, daemon $(pct $((d1 - d0)))%, its jobs (ended) $(pct $((j1 - j0)))%; $(working)"
[ "$(v connected)" = "$SSE_CLIENTS" ] && [ "$(v stayed)" = "$SSE_CLIENTS" ] && [ "$(v lost)" = 0 ] &&
    [ "$(v repeated)" = 0 ] || { echo "bench_http: the fan-out lost clients or events (above)" >&2; exit 1; }
[ "$(v fanout_n)" -gt 0 ] || { echo "bench_http: no event reached the clients while they listened: nothing measured" >&2; exit 1; }
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
