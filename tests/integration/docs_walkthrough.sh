#!/usr/bin/env bash
# docs/getting-started.md step 4, as a newcomer would type it: the fake
# OpenAI server started as documented, then `goald demo` against it; and
# docs/config.md is the generated reference of this binary.
. "$(dirname "$0")/lib.sh"

# the configuration reference in docs/ matches the settings table
"$G" config reference >"$T/config.md"
diff -u "$GOALD_SOURCE_DIR/docs/config.md" "$T/config.md" >"$T/config.diff" ||
    fail "docs/config.md is out of date: run goald config reference > docs/config.md ($(head -c 600 "$T/config.diff"))"
ok

# step 4 of getting-started.md
"$GOALD_BUILD_DIR/tests/fake_llm" --port-file "$T/port" \
    --script "$GOALD_SOURCE_DIR/tests/fixtures/fake/demo.jsonl" --log "$T/fake.log" &
FAKE_PIDS="$FAKE_PIDS $!"
for _ in $(seq 1 200); do [ -s "$T/port" ] && break; sleep 0.05; done
export GOALD_LLM_BASE_URL="http://127.0.0.1:$(cat "$T/port")/v1" GOALD_LLM_MODEL=fake
unset GOALD_DB
run "$G" demo
expect_rc 0 "goald demo against the fake server"
expect_out "demo: the goal completed with its gates passing"
expect_out "model     from GOALD_LLM_*"
# The demo removes its temporary folder (unless --keep)
demodir=$(printf '%s\n' "$OUT" | sed -n 's/^goald demo in //p')
[ -n "$demodir" ] && [ ! -e "$demodir" ] || fail "the demo left $demodir behind"
ok
# the model that did the work was the fake: it saw every request, stage by stage
expect_eq "$(jq -r '.headers["X-Goald-Stage"] // .headers["x-goald-stage"]' "$T/fake.log" | tr '\n' ' ')" \
    "elaborate plan execute execute execute execute review " "stages the fake served"
done_tests
