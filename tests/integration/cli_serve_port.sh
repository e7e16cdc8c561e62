#!/usr/bin/env bash
# serve --listen on a port already in use names that port, and blames no
# certificate when none is configured.
. "$(dirname "$0")/lib.sh"

"$G" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE=$!
FAKE_PIDS="$SERVE"
got_url() { grep -q "serving http://" "$T/serve.out"; }
wait_until 20 got_url
port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/serve.out")
[ -n "$port" ] || fail "no port in: $(cat "$T/serve.out")"

run "$G" serve --listen "127.0.0.1:$port"
expect_rc 1 "serve on a port in use"
expect_err "cannot listen on 127.0.0.1:$port: port $port is in use"
case "$ERR" in *certificate*) fail "a certificate is blamed without one: $ERR" ;; esac
case "$ERR" in *"port 0"*) fail "the port is named as 0: $ERR" ;; esac
