#!/usr/bin/env bash
# Truthful verification on a C project built with CMake and tested
# with ctest, published to a bare remote and the fake forge:
#   - two items each fix one failing test; item 1 leaves the other failing
#     test to item 2 (not blamed: a later item of the plan is to fix it, so
#     item 1 is done but not verified);
#   - the PR's evidence table has one row per (criterion, item) with the
#     item's key, the kind and the test cases that back it, and `unchecked`
#     where nothing does (item 1 does not back "test_mul passes");
#   - the final check on the branch head passes: completed, not partial.
. "$(dirname "$0")/lib.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_MAX_RETRIES=0
forge_start
export GOALD_FORGE_BASE_URL="$FORGE_URL" GOALD_FORGE_OWNER=acme GOALD_FORGE_REPO=calc

R="$T/cproj"
make_repo "$R"
cat >"$R/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(calc C)
enable_testing()
add_library(calc calc.c)
foreach(t add mul)
  add_executable(test_${t} test_${t}.c)
  target_link_libraries(test_${t} calc)
  add_test(NAME test_${t} COMMAND test_${t})
endforeach()
EOF
printf 'int add(int a, int b) { return a - b; }\nint mul(int a, int b) { return a + b; }\n' >"$R/calc.c"
printf 'int add(int, int);\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n' >"$R/test_add.c"
printf 'int mul(int, int);\nint main(void) { return mul(2, 4) == 8 ? 0 : 1; }\n' >"$R/test_mul.c"
echo build/ >"$R/.gitignore"
git -C "$R" add -A; git -C "$R" commit -q -m "calc: add and mul are wrong"
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "file://$T/origin.git"

FIX1='int add(int a, int b) { return a + b; }\nint mul(int a, int b) { return a + b; }\n'
FIX2='int add(int a, int b) { return a + b; }\nint mul(int a, int b) { return a * b; }\n'
cat >"$T/c.jsonl" <<EOF
{"stage": "elaborate", "content": {"components": ["calc.c"], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash"], "verification": []}}
{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Fix add", "type": "code", "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Fix mul", "type": "code", "effort": "S", "critical": true, "depends_on": ["wi-1"]}]}}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "calc.c", "content": "$FIX1"}}, {"name": "complete", "arguments": {"summary": "add adds"}}]}
{"stage": "execute", "tool_calls": [{"name": "write", "arguments": {"path": "calc.c", "content": "$FIX2"}}, {"name": "complete", "arguments": {"summary": "mul multiplies"}}]}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
{"stage": "review", "content": {"verdict": "pass", "findings": []}}
EOF
export GOALD_LLM_SCRIPT="$T/c.jsonl"
jq -n --arg repo "$R" '{title: "Fix calc", description: "add and mul are wrong", repo: $repo,
    base_branch: "main", success_criteria: ["test_add passes", "test_mul passes"],
    verification: [{name: "ctest", type: "test", must_pass: true, timeout_s: 120,
      command: "cmake -S . -B build >/dev/null && cmake --build build >/dev/null && cd build && ctest"}],
    publish: {push: true, remote: "origin", pull_request: true}}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit; GID=$OUT

run "$G" daemon --once
expect_rc 0 "daemon --once"
expect_eq "$(sql "SELECT status||' '||partial FROM goals")" "completed 0" "the goal"
# the PR: one evidence row per (criterion, item)
body=$(jq -r -s '[.[] | select(.method == "POST" and .path == "/repos/acme/calc/pulls")][0].json.body' "$FORGE_LOG")
rows=$(printf '%s\n' "$body" | sed -n '/^| criterion | item | kind | what backs it |/,/^$/p' | grep '^| test_' || true)
expect_eq "$(printf '%s\n' "$rows" | wc -l)" 4 "evidence rows: 2 criteria x 2 items"
expect_eq "$(printf '%s\n' "$rows" | cut -d'|' -f2,3 | tr -s ' ' | tr '\n' ';')" \
    " test_add passes | wi-1 ; test_mul passes | wi-1 ; test_add passes | wi-2 ; test_mul passes | wi-2 ;" "rows by criterion and item"
case "$(printf '%s\n' "$rows" | sed -n 1p)" in *"| wi-1 | test | test \`test_add\` passed |") ok ;; *) fail "row 1: $rows" ;; esac
case "$(printf '%s\n' "$rows" | sed -n 2p)" in *"| wi-1 | unchecked | "*) ok ;; *) fail "row 2 should say unchecked: $rows" ;; esac
case "$(printf '%s\n' "$rows" | sed -n 4p)" in *"| wi-2 | test | test \`test_mul\` passed |") ok ;; *) fail "row 4: $rows" ;; esac
expect_eq "$(sql "SELECT group_concat(s, ' ') FROM (SELECT key||'='||status||'/'||ifnull(verified, 'NULL') AS s FROM work_items ORDER BY key) AS q1")" \
    "wi-1=done/NULL wi-2=done/1" "the items"
expect_eq "$(sql "SELECT json_extract(data,'\$.fixed')||' '||json_extract(data,'\$.pre_existing') FROM decisions d JOIN work_items w ON w.id=d.item_id WHERE d.kind='verification' AND w.key='wi-1'")" \
    '["test_add"] ["test_mul"]' "item 1: fixed and pre-existing test cases"
expect_eq "$(sql "SELECT json_extract(data,'\$.passed') FROM decisions WHERE kind='final_check'")" 1 "the final check passed"

run "$G" report "$GID" --json
expect_eq "$(jqo '[.evidence[] | "\(.item):\(.evidence)"] | join(" ")')" "wi-1:tests wi-1:none wi-2:tests wi-2:tests" "report: the same table"
expect_eq "$(jqo '[.evidence[] | .kind] | join(" ")')" "test unchecked test test" "report: the kinds"

done_tests
