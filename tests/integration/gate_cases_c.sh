#!/usr/bin/env bash
# Per-test results for a C project whose tests are cmocka cases inside
# executables that ctest runs, one ctest test per executable, from the
# gate people write (`cd build && ctest`: goald adds -V, which shows each
# executable's own output): every case is named "EXECUTABLE::case" (the
# same case name in two executables stays two cases), the item is judged
# per test, and the inner case a change breaks is named as introduced.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

export GOALD_CONTROL_BACKOFF_BASE_MS=1
[ -e /usr/include/cmocka.h ] || fail "libcmocka-dev is not installed (scripts/install-deps)"

R="$T/cproj"
make_repo "$R"
mkdir -p "$R/tests"
cat >"$R/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(calc C)
enable_testing()
add_library(calc calc.c)
foreach(t calc other)
  add_executable(test_${t} tests/test_${t}.c)
  target_link_libraries(test_${t} calc cmocka)
  add_test(NAME test_${t} COMMAND test_${t})
endforeach()
EOF
printf 'int add(int a, int b) { return a + b; }\nint mul(int a, int b) { return a * b; }\n' >"$R/calc.c"
head='#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n#include <cmocka.h>\nint add(int, int);\nint mul(int, int);\n'
{
    printf "$head"
    printf 'static void test_add(void **s) { (void)s; assert_int_equal(add(2, 3), 5); }\n'
    printf 'static void test_mul(void **s) { (void)s; assert_int_equal(mul(2, 4), 8); }\n'
    printf 'static void test_zero(void **s) { (void)s; assert_int_equal(mul(0, 4), 0); }\n'
    printf 'int main(void) {\n    const struct CMUnitTest t[] = {cmocka_unit_test(test_add), cmocka_unit_test(test_mul), cmocka_unit_test(test_zero)};\n'
    printf '    return cmocka_run_group_tests(t, NULL, NULL);\n}\n'
} >"$R/tests/test_calc.c"
{
    printf "$head"
    printf 'static void test_add(void **s) { (void)s; assert_int_equal(add(-1, 1), 0); }\n'
    printf 'int main(void) {\n    const struct CMUnitTest t[] = {cmocka_unit_test(test_add)};\n'
    printf '    return cmocka_run_group_tests(t, NULL, NULL);\n}\n'
} >"$R/tests/test_other.c"
echo build/ >"$R/.gitignore"
git -C "$R" add -A
git -C "$R" commit -q -m "calc with cmocka tests"

BROKEN='int add(int a, int b) { return a + b; }\nint mul(int a, int b) { return a * b + (a == 2); }\n'
GOOD='int add(int a, int b) {\n    return a + b;\n}\nint mul(int a, int b) {\n    return a * b;\n}\n'
{
    echo '{"content": {"components": ["calc.c"], "implicit_requirements": [], "success_criteria": [], "allowed_actions": ["read", "write", "edit", "bash"], "verification": []}}'
    echo '{"content": {"work_items": [{"key": "wi-1", "title": "Reformat calc.c", "type": "refactor", "effort": "S", "critical": true, "depends_on": []}]}}'
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.c\", \"content\": \"$BROKEN\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"reformatted\"}}]}"
    echo "{\"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"calc.c\", \"content\": \"$GOOD\"}}, {\"name\": \"complete\", \"arguments\": {\"summary\": \"reformatted, behaviour kept\"}}]}"
    echo '{"content": {"verdict": "pass", "findings": []}}'
} >"$T/calc.jsonl"
start_fake_llm calc openai "$T/calc.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
jq -n --arg repo "$R" '{title: "Reformat calc.c", description: "one statement a line",
    repo: $repo, base_branch: "main", success_criteria: ["calc.c is reformatted"],
    verification: [{name: "ctest", type: "test", must_pass: true, timeout_s: 120,
      command: "cmake -S . -B build >/dev/null && cmake --build build >/dev/null && cd build && ctest"}]}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit

step plan; step plan

# attempt 1: mul is broken: the cmocka case is named as introduced
step work; R1=$RUN
expect_eq "$(jqo .status)/$(jqo .error_class)" failed/gate "a broken case fails the item"
expect_eq "$(sql "SELECT passed||' '||classification||' '||tests_format FROM gate_results WHERE run_id='$R1'")" \
    "0 introduced ctest+cmocka" "the gate"
v=$(sql "SELECT data FROM decisions WHERE kind='verification' AND run_id='$R1'")
expect_eq "$(echo "$v" | jq -r '.granularity')" test "judged per test"
expect_eq "$(echo "$v" | jq -r '.introduced | join(",")')" "test_calc::test_mul" "the introduced case"
case "$(sql "SELECT failure_reason FROM runs WHERE id='$R1'")" in
    *"test_calc::test_mul"*) ok ;; *) fail "failure reason: $(sql "SELECT failure_reason FROM runs WHERE id='$R1'")" ;; esac
expect_eq "$(sql "SELECT format || ' ' || json_array_length(cases) FROM gate_baselines WHERE gate = 'ctest'")" \
    "ctest+cmocka 4" "the baseline: every case"

# attempt 2: behaviour kept: every case named, passing
step work; R2=$RUN
expect_eq "$(jqo .status)" success "the retry"
expect_eq "$(sql "SELECT c.name || ':' || c.status FROM gate_cases c JOIN gate_results r ON r.id = c.gate_result_id WHERE r.run_id = '$R2' AND r.passed = 1" | sort -u | tr '\n' ' ')" \
    "test_calc::test_add:pass test_calc::test_mul:pass test_calc::test_zero:pass test_other::test_add:pass " \
    "the passing run's cases"
v=$(sql "SELECT data FROM decisions WHERE kind='verification' AND run_id='$R2'")
expect_eq "$(echo "$v" | jq -r '.granularity')" test "judged per test"
# the record keeps the command as written
expect_eq "$(sql "SELECT DISTINCT command FROM gate_results WHERE run_id='$R2'")" \
    "cmake -S . -B build >/dev/null && cmake --build build >/dev/null && cd build && ctest" "the command as written"
done_tests
