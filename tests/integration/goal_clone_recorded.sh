#!/usr/bin/env bash
# Whether a goal is in clone mode (its repo a URL or a bare repository:
# docs/scaling.md) is decided once, at submit (goals.clone), so that a
# job need not open the repository to know where the goal's code is:
#   1. submit records it: a working repository 0, a bare one 1, a URL 1;
#   2. the jobs go by the record: a goal on a working repository recorded
#      as clone mode is elaborated as one ("not on this node");
#   3. a goal submitted before the record existed (NULL) asks its
#      repository, as before: local again.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

ELAB='{"components": [], "implicit_requirements": [], "success_criteria": ["it works"], "allowed_actions": ["read"], "verification": []}'
{ for i in 1 2 3; do echo "{\"content\": $ELAB}"; done; } >"$T/s.jsonl"
start_fake_llm s openai "$T/s.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1

make_repo "$T/work"
git clone -q --bare "$T/work" "$T/bare.git"
db_use rec
for r in "$T/work" "$T/bare.git"; do
    printf '{"title": "t", "repo": "%s", "base_branch": "main"}' "$r" >"$T/g.json"
    run "$G" submit "$T/g.json"; expect_rc 0 "submit on $r"
done
printf '{"title": "t", "repo": "https://example.invalid/x.git", "base_branch": "main"}' >"$T/g.json"
run "$G" submit "$T/g.json"; expect_rc 0 "submit on a URL"
expect_eq "$(sql "SELECT group_concat(clone, ' ') FROM (SELECT clone FROM goals ORDER BY created_at, rowid)")" "0 1 1" \
    "recorded: working 0, bare 1, URL 1"

# 2. the record decides: a working repository recorded as clone mode
submit_fresh rec2 "$T/work"
sql "UPDATE goals SET clone = 1" >/dev/null
step plan
tail -1 "$FAKE_LOG" | grep -q "The repository's folder is not on this node" ||
    fail "elaborated as a clone-mode goal: $(tail -1 "$FAKE_LOG" | cut -c1-400)"
ok

# 3. not recorded (submitted before): the repository is asked
submit_fresh rec3 "$T/work"
sql "UPDATE goals SET clone = NULL" >/dev/null
step plan
if tail -1 "$FAKE_LOG" | grep -q "The repository's folder is not on this node"; then
    fail "a goal without the record, on a working repository, elaborated as clone mode"
fi
ok
done_tests
