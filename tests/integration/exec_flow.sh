#!/usr/bin/env bash
# A one-item goal goes elaborate -> plan -> execute (read, edit,
# bash, complete) -> verify -> done through `goald claim` and `goald job`,
# on a temporary git repository with the script provider; the events come
# in order, and tokens and cost are summed on each run and on the goal
# from the script's usage and the chain's prices.
. "$(dirname "$0")/lib.sh"

R="$T/repo"
make_repo "$R"
cp "$GOALD_SOURCE_DIR/share/demo-project/add.sh" "$GOALD_SOURCE_DIR/share/demo-project/test.sh" "$R/"
git -C "$R" add add.sh test.sh
git -C "$R" commit -q -m "add.sh and its test"

S="$T/s.jsonl"
cat >"$S" <<'EOF'
{"stage": "elaborate", "content": {"components": ["add.sh"], "implicit_requirements": [], "success_criteria": ["sh test.sh exits 0"], "allowed_actions": ["read", "edit", "bash", "run_gates"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]}, "usage": {"input": 1000, "output": 100}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Fix add", "description": "make it add", "type": "code", "priority": 80, "effort": "S", "critical": true, "depends_on": []}]}, "usage": {"input": 2000, "output": 200}}
{"stage": "execute", "content": "look", "tool_calls": [{"name": "read", "arguments": {"path": "add.sh"}}], "usage": {"input": 3000, "output": 300}}
{"stage": "execute", "tool_calls": [{"name": "edit", "arguments": {"path": "add.sh", "old_text": "$(($1 - $2))", "new_text": "$(($1 + $2))"}}], "usage": {"input": 4000, "output": 400}}
{"stage": "execute", "tool_calls": [{"name": "bash", "arguments": {"command": "sh test.sh > bash-ran.txt; cat bash-ran.txt"}}], "usage": {"input": 5000, "output": 500}}
{"stage": "execute", "tool_calls": [{"name": "complete", "arguments": {"summary": "add.sh adds now"}}], "usage": {"input": 6000, "output": 600}}
{"stage": "review", "content": {"verdict": "pass", "findings": []}, "usage": {"input": 7000, "output": 700}}
EOF
# USD per million tokens: 1 in, 2 out
export GOALD_LLM_MODELS="[{\"provider\":\"script\",\"model\":\"m1\",\"script\":\"$S\",\"price_in\":1.0,\"price_out\":2.0}]"

printf '{"title":"fix add","repo":"%s","base_branch":"main"}' "$R" >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 0
GID=$OUT

# --- elaborate --------------------------------------------------------------
run "$G" claim --lane plan --json
expect_rc 0 "claim elaborate"
expect_eq "$(jqo .kind)" elaborate
RUN=$(jqo .run_id)
run "$G" job "$RUN" --json
expect_rc 0; expect_eq "$(jqo .status)" success
expect_eq "$(sql "SELECT status FROM goals")" active
expect_eq "$(sql "SELECT json_extract(verification,'\$[0].command') FROM goals")" "sh test.sh"
expect_eq "$(sql "SELECT tokens_in||'/'||tokens_out||'/'||cost_usd FROM runs WHERE id='$RUN'")" "1000/100/0.0012"

# --- plan -------------------------------------------------------------------
run "$G" claim --lane plan --json
expect_rc 0 "claim plan"
expect_eq "$(jqo .kind)" plan
RUN=$(jqo .run_id)
run "$G" job "$RUN" --json
expect_rc 0; expect_eq "$(jqo .status)" success
expect_eq "$(sql "SELECT key||':'||status FROM work_items")" "wi-1:ready"
run "$G" claim --lane plan
expect_rc 1 "nothing more to plan"

# --- execute ----------------------------------------------------------------
run "$G" claim --lane work --json
expect_rc 0 "claim execute"
expect_eq "$(jqo .kind)" execute
RUN=$(jqo .run_id)
ITEM=$(jqo .item_id)
expect_eq "$(sql "SELECT status FROM work_items WHERE id='$ITEM'")" in_progress
run "$G" job "$RUN" --json
expect_rc 0; expect_eq "$(jqo .status)" success
expect_eq "$(sql "SELECT status||' '||verified FROM work_items")" "done 1"

# the events of the execute run, in order (tool events named by tool)
seq=$(sql "SELECT CASE WHEN type LIKE 'tool_call.%' THEN type||':'||json_extract(payload,'\$.tool')
                       WHEN type LIKE 'llm.%' THEN type||':'||json_extract(payload,'\$.stage')
                       ELSE type END FROM events WHERE (run_id='$RUN' OR (item_id='$ITEM' AND type LIKE 'work_item.%'))
              AND id >= (SELECT min(id) FROM events WHERE run_id='$RUN') ORDER BY id" | tr '\n' ' ')
expect_eq "$seq" "run.claimed run.started \
turn.started llm.request:execute llm.response:execute turn.completed tool_call.started:read tool_call.completed:read \
turn.started llm.request:execute llm.response:execute turn.completed tool_call.started:edit tool_call.completed:edit \
turn.started llm.request:execute llm.response:execute turn.completed tool_call.started:bash tool_call.completed:bash \
turn.started llm.request:execute llm.response:execute turn.completed tool_call.started:complete tool_call.completed:complete \
work_item.verify gate.completed gate.baseline llm.request:review llm.response:review review.completed work_item.done run.success " "execute run events"
# the goal's stages in order, over every run
stages=$(sql "SELECT type FROM events WHERE type IN ('goal.submitted','goal.elaborated','goal.active',
              'plan.created','work_item.in_progress','work_item.verify','work_item.done') ORDER BY id" | tr '\n' ' ')
expect_eq "$stages" "goal.submitted goal.elaborated goal.active plan.created work_item.in_progress work_item.verify work_item.done " "stage events"
# turn.completed carries the turn's tokens
expect_eq "$(sql "SELECT group_concat(json_extract(payload,'\$.tokens_in')||'+'||json_extract(payload,'\$.tokens_out'),' ') FROM events WHERE run_id='$RUN' AND type='turn.completed'")" \
    "3000+300 4000+400 5000+500 6000+600"
# the tools really ran: the edit is committed, the bash command left its file
expect_eq "$(git -C "$R" show "$(sql "SELECT commit_sha FROM work_items")":add.sh | tail -1)" 'echo $(($1 + $2))' "committed edit"
expect_eq "$(sql "SELECT json_extract(payload,'\$.exit_code') FROM events WHERE run_id='$RUN' AND type='tool_call.completed' AND json_extract(payload,'\$.tool')='bash'")" 0
expect_eq "$(sql "SELECT count(*) FROM artifacts WHERE type='file' AND path='bash-ran.txt'")" 1 "bash output file committed"

# tokens and cost: 4 execute turns + the review on the execute run
expect_eq "$(sql "SELECT tokens_in||'/'||tokens_cached||'/'||tokens_out FROM runs WHERE id='$RUN'")" "25000/0/2500"
expect_eq "$(sql "SELECT printf('%.6f', cost_usd) FROM runs WHERE id='$RUN'")" "0.030000"
expect_eq "$(sql "SELECT turns FROM runs WHERE id='$RUN'")" 5 "model calls of the execute run"
expect_eq "$(sql "SELECT json_extract(payload,'\$.turns') FROM events WHERE run_id='$RUN' AND type='run.success'")" 5
# the goal: the sum over its runs (input + output tokens)
expect_eq "$(sql "SELECT spent_tokens FROM goals")" 30800
expect_eq "$(sql "SELECT printf('%.6f', spent_cost_usd) FROM goals")" "0.033600"
expect_eq "$(sql "SELECT printf('%.6f', sum(cost_usd)) FROM runs")" "0.033600"
run "$G" report "$GID" --json
expect_rc 0
expect_eq "$(jqo .budget.tokens.spent)" 30800
expect_eq "$(jqo '.work_items[0].verified')" true

done_tests
