#!/usr/bin/env bash
# The same soak as serve.sh with the daemon serving the API itself
# (http.listen): the streams and requests reconnect across its 20 restarts.
. "$(dirname "$0")/lib.sh"
soak daemon
done_tests
