#!/usr/bin/env bash
# Nothing written is lost with `goald serve` beside the daemon: 4 live
# event streams and short requests against the server, 50 goals submitted
# by API and by CLI, the daemon started and stopped 20 times beside it (5
# of the stops SIGKILL).  Afterwards PRAGMA integrity_check is ok, every
# goal is in the database, served by the API and seen by every stream, and
# nothing was answered 5xx (tests/soak/soak.py).
. "$(dirname "$0")/lib.sh"
soak serve
done_tests
