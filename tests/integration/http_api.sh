#!/usr/bin/env bash
# The HTTP API: tests/http/test_api.py drives the real `goald
# serve` over loopback and checks every answer against docs/openapi.json.
. "$(dirname "$0")/lib.sh"
set -e
/usr/bin/python3 -c 'import jsonschema, pytest' 2>/dev/null ||
    fail "python3-jsonschema and python3-pytest are needed (scripts/install-deps)"
cd "$T"
/usr/bin/python3 -m pytest -q -p no:cacheprovider "$GOALD_SOURCE_DIR/tests/http"
