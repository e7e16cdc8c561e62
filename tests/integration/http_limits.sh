#!/usr/bin/env bash
# The HTTP server's limits (tests/http/limits.py): a 20 MiB event reaches 8
# streams whole while serve's memory stays bounded; 64 slow clients cannot
# keep a valid request from being answered, and are cut at their deadline.
. "$(dirname "$0")/lib.sh"
set -e
/usr/bin/python3 -c 'import jsonschema, pytest' 2>/dev/null ||
    fail "python3-jsonschema and python3-pytest are needed (scripts/install-deps)"
cd "$T"
/usr/bin/python3 -m pytest -q -s -p no:cacheprovider "$GOALD_SOURCE_DIR/tests/http/limits.py"
