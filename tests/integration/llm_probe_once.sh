#!/usr/bin/env bash
# The Ollama window probe (POST /api/show) is asked once per endpoint and
# model, not once per job: a goal of two items (elaborate, plan, two
# execute jobs, each a process of its own) against a local OpenAI-like
# server sends it at most once, and the answer is remembered:
#   - a server that is not an Ollama (its /api/show is a 404, as vLLM's,
#     llama.cpp's or LiteLLM's): one probe, then none;
#   - an Ollama-like server (the fake with --ollama-num-ctx 8192): one
#     probe, and every execute job still uses the window it told (a
#     quarter of 8192 asked as max_tokens).
# A counting proxy in front of the fake notes every /api/show it sees.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1

# proxy NAME UPSTREAM MODE: a proxy on loopback that counts /api/show in
# $T/NAME.shows (MODE 404: it answers them 404 itself; MODE pass: it
# forwards them) and forwards everything else to UPSTREAM (its root, no
# /v1); sets PROXY_URL (ending in /v1).
proxy() {
    rm -f "$T/$1.port"
    : >"$T/$1.shows"
    /usr/bin/python3 - "$T/$1.port" "$2" "$3" "$T/$1.shows" >"$T/$1.out" 2>&1 <<'EOF' &
import http.server, sys, urllib.request, urllib.error
port_file, upstream, mode, shows = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def relay(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if self.path.endswith("/api/show"):
            with open(shows, "a") as f:
                f.write(self.path + "\n")
            if mode == "404":
                self.send_response(404)
                self.send_header("Content-Length", "18")
                self.end_headers()
                self.wfile.write(b"404 page not found")
                return
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in ("host", "content-length", "connection")}
        rq = urllib.request.Request(upstream + self.path, data=body, headers=hdrs,
                                    method=self.command)
        try:
            r = urllib.request.urlopen(rq, timeout=60)
            status, rh, data = r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            status, rh, data = e.code, e.headers, e.read()
        self.send_response(status)
        for k, v in rh.items():
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST = relay
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
EOF
    FAKE_PIDS="$FAKE_PIDS $!"
    for _ in $(seq 1 200); do [ -s "$T/$1.port" ] && break; nap 0.05; done
    [ -s "$T/$1.port" ] || fail "proxy $1 did not start: $(cat "$T/$1.out")"
    PROXY_URL="http://127.0.0.1:$(cat "$T/$1.port")/v1"
}

R="$T/repo"
make_repo "$R"
PLAN2='{"work_items": [
  {"key": "wi-1", "title": "a", "type": "code", "effort": "S", "critical": true, "depends_on": []},
  {"key": "wi-2", "title": "b", "type": "code", "effort": "S", "critical": true, "depends_on": ["wi-1"]}]}'
script() {
    printf '{"content": %s}\n{"content": %s}\n' "$ELAB" "$(printf '%s' "$PLAN2" | jq -c .)"
    printf '{"tool_calls": [%s]}\n' "$(write a.txt "a")"
    printf '{"tool_calls": [%s]}\n' "$(complete "a.txt written")"
    printf '{"content": %s}\n' "$REVIEW"
    printf '{"tool_calls": [%s]}\n' "$(write b.txt "b")"
    printf '{"tool_calls": [%s]}\n' "$(complete "b.txt written")"
    printf '{"content": %s}\n' "$REVIEW"
}

# drive NAME: the goal's four jobs, each through `goald job`
drive() {
    submit_fresh "$1" "$R"
    step plan; step plan
    step work; expect_eq "$(jqo .status)" success "$1: wi-1"
    step work; expect_eq "$(jqo .status)" success "$1: wi-2"
    expect_eq "$(sql "SELECT status FROM work_items ORDER BY key" | tr '\n' ' ')" "done done " \
        "$1: the items"
}

export GOALD_LLM_PROVIDER=openai GOALD_LLM_MODEL=qwen2.5-coder:7b

# a server that is not an Ollama: one probe in four jobs
script >"$T/s-404.jsonl"
start_fake_llm f404 openai "$T/s-404.jsonl"
proxy p404 "${FAKE_URL%/v1}" 404
export GOALD_LLM_BASE_URL="$PROXY_URL"
drive notollama
expect_eq "$(grep -c . "$T/p404.shows")" 1 "/api/show requests to a server that is not an Ollama"
expect_eq "$(sql "SELECT count(*) FROM llm_endpoint_quirks WHERE base_url = 'ollama-probe:$PROXY_URL' AND context_window = 0")" 1 \
    "the answer \"not an Ollama\" remembered"

# an Ollama-like server: one probe, and its window serves every job
script >"$T/s-oll.jsonl"
FAKE_LLM_ARGS="--ollama-num-ctx 8192" start_fake_llm foll openai "$T/s-oll.jsonl"
proxy poll "${FAKE_URL%/v1}" pass
export GOALD_LLM_BASE_URL="$PROXY_URL"
drive ollama
expect_eq "$(grep -c . "$T/poll.shows")" 1 "/api/show requests to an Ollama"
expect_eq "$(jq -s '[.[] | select(.headers["x-goald-stage"] == "execute") | .body.max_tokens] | unique | join(",")' "$FAKE_LOG")" '"2048"' \
    "max_tokens of every execute request (the window told by the one probe)"

done_tests
