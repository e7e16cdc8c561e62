#!/usr/bin/env bash
# A forge's refusal is not the model's (review of resolve.c): a forge 401
# opens a publish escalation of type auth, and
#  - a successful model call (another goal's elaboration) closes goal-level
#    outage escalations only: never the publish unit's (a hung push, here a
#    timeout of the publish run) nor an item's timeout;
#  - the model's auth breaker closing (its configuration changed) leaves the
#    forge's auth escalation open (the forge token did not change);
#  - a human resolving the forge's auth escalation leaves the model's auth
#    breaker as it was.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

submit_goal_forge_refuses
G1=$GOAL_ID

run timeout 120 "$G" daemon --once
expect_rc 3 "daemon --once: the goal waits on a human"
PUB=$(sql "SELECT id FROM runs WHERE kind = 'publish'")
ITEM=$(sql "SELECT id FROM work_items LIMIT 1")
FORGE_ESC=$(sql "SELECT id FROM escalations WHERE status = 'open' AND type = 'auth'")
[ -n "$FORGE_ESC" ] || fail "no auth escalation for the forge's 401"
ok
# a hung push (the publish run's timeout) and an item's timeout, both open;
# the model's auth breaker open for a configuration that is not this one
sql "INSERT INTO escalations(id, goal_id, run_id, type, packet, created_at)
     VALUES('esc-pubtimeout', '$G1', '$PUB', 'timeout', '{\"scope\":\"publish\"}', 1)"
sql "INSERT INTO escalations(id, goal_id, item_id, type, packet, created_at)
     VALUES('esc-itemtimeout', '$G1', '$ITEM', 'timeout', '{\"scope\":\"item\"}', 1)"
sql "INSERT INTO breakers(error_class, state, failures, opened_at, config_fp, reason, updated_at)
     VALUES('auth', 'open', 1, 1, 'an-older-configuration', 'the model refused the key', 1)"

# another goal: its elaboration is a successful model call
goal_json "$T/repo" "Another goal" >"$T/goal2.json"
run "$G" submit "$T/goal2.json"
expect_rc 0 "submit the second goal"
run "$G" claim --lane plan --json
expect_rc 0 "claim the second goal's elaboration"
expect_eq "$(jqo .kind)" elaborate "the claim"
RUN=$(jqo .run_id)
echo '{"stage":"elaborate","content":{"components":["add.sh"],"implicit_requirements":[],"success_criteria":["ok"],"allowed_actions":["bash"],"verification":[]}}' >"$T/two.jsonl"
GOALD_LLM_SCRIPT="$T/two.jsonl" run "$G" job "$RUN" --json
expect_rc 0 "the elaboration runs"
expect_eq "$(jqo .status)" success "the elaboration"
expect_eq "$(sql "SELECT status FROM escalations WHERE id = 'esc-pubtimeout'")" open \
    "a hung push's escalation after a model call succeeded"
expect_eq "$(sql "SELECT status FROM escalations WHERE id = 'esc-itemtimeout'")" open \
    "an item's timeout escalation after a model call succeeded"
expect_eq "$(sql "SELECT status FROM escalations WHERE id = '$FORGE_ESC'")" open \
    "the forge's auth escalation after the model's auth breaker closed"

# the model's auth breaker open again; a human answers the forge's refusal
sql "UPDATE breakers SET state = 'open', config_fp = 'an-older-configuration' WHERE error_class = 'auth'"
run "$G" resolve "$FORGE_ESC" --action retry --input "the token is fixed"
expect_rc 0 "resolve the forge's escalation"
expect_eq "$(sql "SELECT state FROM breakers WHERE error_class = 'auth'")" open \
    "the model's auth breaker after the forge's escalation was resolved"
done_tests
