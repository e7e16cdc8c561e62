/* Unit tests: a gate's output digested for a model (lifecycle/digest.c):
 * pytest's failures and summary kept, its warnings dropped; TAP's failing
 * tests and counts kept, its passes and stacks dropped; other output's
 * last lines; no cut inside a line or a UTF-8 sequence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/digest.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

static const char pytest_out[] =
    "============================= test session starts ==============================\n"
    "collected 2 items\n"
    "\n"
    "tests/test_calc.py F.                                                    [100%]\n"
    "\n"
    "=================================== FAILURES ===================================\n"
    "___________________________________ test_mul ___________________________________\n"
    "\n"
    "    def test_mul():\n"
    ">       assert calc.mul(2, 3) == 6\n"
    "E       assert 5 == 6\n"
    "\n"
    "tests/test_calc.py:8: AssertionError\n"
    "=============================== warnings summary ===============================\n"
    "tests/test_calc.py::test_noisy\n"
    "  tests/test_calc.py:13: DeprecationWarning: deprecated helper\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_calc.py::test_mul - assert 5 == 6\n"
    "=================== 1 failed, 1 passed, 1 warning in 0.01s ====================\n";

static void test_pytest(void **state)
{
    strbuf sb;
    const char *s;

    (void)state;
    strbuf_init(&sb, 1 << 16);
    digest_output(&sb, pytest_out, 0, 6000);
    s = strbuf_cstr(&sb);
    assert_non_null(strstr(s, "E       assert 5 == 6\n"));
    assert_non_null(strstr(s, "_ test_mul _"));
    assert_non_null(strstr(s, "FAILED tests/test_calc.py::test_mul - assert 5 == 6\n"));
    assert_non_null(strstr(s, "1 failed, 1 passed, 1 warning in 0.01s"));
    assert_null(strstr(s, "DeprecationWarning"));
    assert_null(strstr(s, "= warnings summary ="));
    assert_null(strstr(s, "collected 2 items"));
    assert_non_null(strstr(s, "[pytest's warnings summary and progress lines left out]"));
    /* the summary first in the budget: a small one keeps it, cuts the failures */
    strbuf_reset(&sb);
    digest_output(&sb, pytest_out, 0, 300);
    s = strbuf_cstr(&sb);
    assert_non_null(strstr(s, "FAILED tests/test_calc.py::test_mul"));
    assert_non_null(strstr(s, "more lines of the failures left out]"));
    strbuf_release(&sb);
}

/* node --test's TAP: a passing and a failing subtest */
static const char tap_out[] =
    "TAP version 13\n"
    "# Subtest: ms\n"
    "    # Subtest: parses days\n"
    "    ok 1 - parses days\n"
    "      ---\n"
    "      duration_ms: 0.51\n"
    "      ...\n"
    "    # Subtest: formats weeks\n"
    "    not ok 2 - formats weeks\n"
    "      ---\n"
    "      duration_ms: 1.02\n"
    "      location: 'test/format.test.js:17:10'\n"
    "      failureType: 'testCodeFailure'\n"
    "      error: |-\n"
    "        Expected values to be strictly equal:\n"
    "        + '1 week' - '1 weeks'\n"
    "      code: 'ERR_ASSERTION'\n"
    "      stack: |-\n"
    "        TestContext.<anonymous> (test/format.test.js:17:10)\n"
    "        Test.runInAsyncScope (node:async_hooks:203:9)\n"
    "        process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n"
    "      ...\n"
    "    1..2\n"
    "not ok 1 - ms\n"
    "  ---\n"
    "  duration_ms: 3.2\n"
    "  ...\n"
    "1..1\n"
    "# tests 2\n"
    "# suites 0\n"
    "# pass 1\n"
    "# fail 1\n"
    "# duration_ms 48.1\n";

static void test_tap(void **state)
{
    strbuf sb;
    const char *s;

    (void)state;
    strbuf_init(&sb, 1 << 16);
    digest_output(&sb, tap_out, 0, 6000);
    s = strbuf_cstr(&sb);
    assert_non_null(strstr(s, "    not ok 2 - formats weeks\n"));
    assert_non_null(strstr(s, "+ '1 week' - '1 weeks'\n"));
    assert_non_null(strstr(s, "location: 'test/format.test.js:17:10'"));
    assert_non_null(strstr(s, "# fail 1\n"));
    assert_non_null(strstr(s, "# tests 2\n"));
    assert_null(strstr(s, "ok 1 - parses days"));
    assert_null(strstr(s, "stack:"));
    assert_null(strstr(s, "node:internal"));
    assert_null(strstr(s, "async_hooks"));
    assert_null(strstr(s, "duration_ms"));
    assert_non_null(strstr(s, "left out]"));
    strbuf_release(&sb);
}

static void test_tail_lines(void **state)
{
    strbuf sb;
    const char *s;

    (void)state;
    strbuf_init(&sb, 1 << 16);
    /* the front was cut: "ial line" is dropped, the rest kept whole */
    digest_output(&sb, "ial line\nline two\nline three\nnot ok - last\n", 1, 30);
    s = strbuf_cstr(&sb);
    assert_string_equal(s, "[1 earlier lines left out]\nline three\nnot ok - last\n");
    strbuf_release(&sb);
}

static void test_utf8_long_line(void **state)
{
    strbuf sb, in;

    (void)state;
    strbuf_init(&sb, 1 << 16);
    strbuf_init(&in, 1 << 16);
    for (int i = 0; i < 3000; i++)
        assert_int_equal(strbuf_adds(&in, "\xc3\xa9"), 0); /* é */
    digest_output(&sb, strbuf_cstr(&in), 0, 101);
    assert_true(sb.len <= 101);
    assert_int_equal(utf8_invalid_count(strbuf_cstr(&sb), sb.len), 0);
    assert_non_null(strstr(strbuf_cstr(&sb), "\xe2\x80\xa6\n"));
    strbuf_release(&in);
    strbuf_release(&sb);
}

static void test_reason(void **state)
{
    strbuf sb;
    const char *s;

    (void)state;
    strbuf_init(&sb, 1 << 16);
    digest_reason(&sb,
                  "tests weakened: tests/a.py: with these files as they were at the baseline "
                  "abc the gates fail (the original tests judge the item's product):\n"
                  "gate pytest failed (exit 1); the gate passed at the baseline abc:\n"
                  "=================================== FAILURES ===================================\n"
                  "E       assert 1 == 2\n"
                  "=============================== warnings summary ===============================\n"
                  "  W: noisy\n"
                  "========================= 1 failed in 0.01s =========================\n",
                  2000);
    s = strbuf_cstr(&sb);
    assert_true(s == strstr(s, "tests weakened: tests/a.py:"));
    assert_non_null(strstr(s, "\ngate pytest failed (exit 1); the gate passed at the baseline abc:\n"));
    assert_non_null(strstr(s, "E       assert 1 == 2\n"));
    assert_null(strstr(s, "noisy"));
    assert_true(digest_is_header("gate g failed (exit 2):", 23));
    assert_false(digest_is_header("gate g passed:", 14));
    strbuf_release(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytest),
        cmocka_unit_test(test_tap),
        cmocka_unit_test(test_tail_lines),
        cmocka_unit_test(test_utf8_long_line),
        cmocka_unit_test(test_reason),
    };
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
