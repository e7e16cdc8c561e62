/* Unit tests: gate output parsed into test cases (real outputs of pytest,
 * node, ctest, cargo and a bash TAP script in tests/fixtures/gates), the
 * JUnit parser's hardening, report files read under the path policy, the
 * per-case comparison and the gate_cases rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "store/internal.h"
#include "gates/gates.h"
#include "store/store.h"
#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/strbuf.h"

static int setup(void **state)
{
    (void)state;
    testutil_setup("gates_parse");
    return 0;
}

/* The text of tests/fixtures/gates/name. */
static char *fixture(const char *name, size_t *len)
{
    const char *src = getenv("GOALD_SOURCE_DIR");
    char path[1024];
    strbuf sb;

    snprintf(path, sizeof(path), "%s/tests/fixtures/gates/%s", src ? src : GOALD_SOURCE_DIR, name);
    strbuf_init(&sb, 1 << 20);
    assert_int_equal(fs_read_file(&sb, path, 1 << 20), 0);
    return strbuf_detach(&sb, len);
}

/* "P id\nF id\nS id\n" in the order found. */
static const char *summary(const struct test_cases *c)
{
    static char out[8192];
    size_t n = 0;

    out[0] = '\0';
    for (size_t i = 0; i < c->n; i++) {
        const struct test_case *t = &c->v[i];
        char mark = t->status == TEST_FAIL ? 'F' : t->status == TEST_SKIP ? 'S' : 'P';
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%c %s\n", mark, t->id);
    }
    return out;
}

/* Parse a fixture as a gate's output (no report file). */
static void parse_fixture(struct test_cases *c, const char *name)
{
    size_t len;
    char *text = fixture(name, &len);
    char note[256];

    assert_int_equal(gates_parse_cases(c, text, len, NULL, NULL, note, sizeof(note)), 0);
    assert_string_equal(note, "");
    free(text);
}

static const char *file_of(const struct test_cases *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].id, id))
            return c->v[i].file ? c->v[i].file : "(null)";
    return "(absent)";
}

static void test_pytest_rA(void **state)
{
    struct test_cases c;
    struct test_counts k;
    (void)state;

    parse_fixture(&c, "pytest_rA.txt");
    assert_string_equal(c.format, "pytest");
    assert_string_equal(summary(&c), "P tests/test_a.py::test_pass\n"
                                     "P tests/test_a.py::test_param[a b]\n"
                                     "P tests/test_a.py::TestK::test_m\n"
                                     "S tests/test_a.py::test_xfail\n"
                                     "P tests/test_a.py::test_xpass\n"
                                     "F tests/test_a.py::test_error\n"
                                     "F tests/test_a.py::test_fail\n"
                                     "F tests/test_a.py::test_param[c - d]\n");
    assert_int_equal(c.unnamed_skips, 1); /* SKIPPED [1] tests/test_a.py:4: not today */
    assert_string_equal(file_of(&c, "tests/test_a.py::TestK::test_m"), "tests/test_a.py");
    gates_counts_from_cases(&k, &c);
    assert_int_equal(k.passed, 4);
    assert_int_equal(k.failed, 3);
    assert_int_equal(k.skipped, 2);
    assert_int_equal(k.total, 9);
    assert_string_equal(k.format, "pytest");
    test_cases_release(&c);
}

static void test_pytest_v(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "pytest_v.txt");
    assert_string_equal(c.format, "pytest");
    /* the -v lines, then the short summary (-rfE) repeating failures: merged */
    assert_string_equal(summary(&c), "P tests/test_a.py::test_pass\n"
                                     "F tests/test_a.py::test_fail\n"
                                     "S tests/test_a.py::test_skip\n"
                                     "S tests/test_a.py::test_xfail\n"
                                     "P tests/test_a.py::test_xpass\n"
                                     "F tests/test_a.py::test_error\n"
                                     "P tests/test_a.py::test_param[a b]\n"
                                     "F tests/test_a.py::test_param[c - d]\n"
                                     "P tests/test_a.py::TestK::test_m\n");
    assert_int_equal(c.unnamed_skips, 0);
    test_cases_release(&c);
}

static void test_unittest(void **state)
{
    struct test_cases c;
    struct test_counts k;
    size_t len;
    char *text;
    (void)state;

    /* -v: every outcome, a docstring's result on the next line */
    parse_fixture(&c, "unittest_v.txt");
    assert_string_equal(c.format, "unittest");
    assert_string_equal(summary(&c), "P tests.test_calc.TestCalc.test_doc\n"
                                     "F tests.test_calc.TestCalc.test_error\n"
                                     "F tests.test_calc.TestCalc.test_fail\n"
                                     "P tests.test_calc.TestCalc.test_pass\n"
                                     "S tests.test_calc.TestCalc.test_skip\n"
                                     "S tests.test_calc.TestCalc.test_xfail\n");
    assert_string_equal(file_of(&c, "tests.test_calc.TestCalc.test_fail"),
                        "tests/test_calc.py");
    test_cases_release(&c);
    /* without -v only the failures are named; the summary says 6 ran */
    parse_fixture(&c, "unittest_q.txt");
    assert_string_equal(summary(&c), "F tests.test_calc.TestCalc.test_error\n"
                                     "F tests.test_calc.TestCalc.test_fail\n");
    test_cases_release(&c);
    text = fixture("unittest_q.txt", &len);
    gates_parse_counts(&k, text, len);
    free(text);
    assert_string_equal(k.format, "unittest");
    assert_int_equal(k.total, 6);
    assert_int_equal(k.failed, 2);
    assert_int_equal(k.skipped, 2);
    assert_int_equal(k.passed, 2);
    /* Python before 3.11 names the class only */
    text = "test_add (test_m.TestK) ... ok\ntest_sub (test_m.TestK) ... FAIL\n";
    assert_int_equal(gates_parse_cases(&c, text, strlen(text), NULL, NULL, NULL, 0), 0);
    assert_string_equal(summary(&c), "P test_m.TestK.test_add\nF test_m.TestK.test_sub\n");
    test_cases_release(&c);
}

/* What the commands people write get so that they name every case. */
static void test_instrument(void **state)
{
    struct gate_spec g = {.name = "t", .type = "test", .must_pass = 1};
    const char *env[4];
    char *cmd;
    (void)state;

    g.command = "PYTHONPATH=src python3 -m pytest -q";
    cmd = gates_instrument(&g, env, 4);
    assert_null(cmd);
    assert_string_equal(env[0], "PYTEST_ADDOPTS=-rA");
    assert_null(env[1]);
    g.command = "python3 -m unittest discover -s tests";
    cmd = gates_instrument(&g, env, 4);
    assert_string_equal(cmd, "python3 -m unittest discover -v -s tests");
    assert_null(env[0]);
    free(cmd);
    g.command = "cd src && python3 -m unittest tests.test_calc";
    cmd = gates_instrument(&g, env, 4);
    assert_string_equal(cmd, "cd src && python3 -m unittest -v tests.test_calc");
    free(cmd);
    g.command = "python3 -m unittest -v";
    assert_null(gates_instrument(&g, env, 4));
    g.command = "go test ./...";
    cmd = gates_instrument(&g, env, 4);
    assert_string_equal(cmd, "go test -json ./...");
    free(cmd);
    g.command = "go test -json ./...";
    assert_null(gates_instrument(&g, env, 4));
    /* ctest shows the executables' own output, their cases, with -V */
    g.command = "cd build && ctest --output-on-failure";
    cmd = gates_instrument(&g, env, 4);
    assert_string_equal(cmd, "cd build && ctest -V --output-on-failure");
    free(cmd);
    g.command = "ctest --test-dir build -VV";
    assert_null(gates_instrument(&g, env, 4));
    g.command = "ctest --verbose";
    assert_null(gates_instrument(&g, env, 4));
    g.command = "sh test.sh";
    assert_null(gates_instrument(&g, env, 4));
    assert_null(env[0]);
}

static void test_node_tap(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "node_tap.txt");
    assert_string_equal(c.format, "tap");
    /* suites and parents are not cases of their own: their children are */
    assert_string_equal(summary(&c), "P top passes\n"
                                     "F top fails\n"
                                     "S skipped one\n"
                                     "S todo one\n"
                                     "P suite > inner ok\n"
                                     "F suite > inner bad\n"
                                     "P suite > deeper > leaf\n"
                                     "P parent > child a\n");
    test_cases_release(&c);
}

/* `npm test` running `node --test` over two files on Node 20 (TAP, as
 * its output is no terminal): every case named; Node names no file for a
 * passing test, so one name at the top of two files is one case, failed
 * when either failed. */
static void test_node_tap_files(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "node_tap_files.txt");
    assert_string_equal(c.format, "tap");
    assert_string_equal(summary(&c), "F adds\n"
                                     "F fails\n"
                                     "P grp > inner\n"
                                     "P grp > other\n");
    test_cases_release(&c);
}

static void test_node_spec(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "node_spec.txt");
    assert_string_equal(c.format, "node");
    /* the same ids as its TAP reporter; the "failing tests:" recap is not read */
    assert_string_equal(summary(&c), "P top passes\n"
                                     "F top fails\n"
                                     "S skipped one\n"
                                     "S todo one\n"
                                     "P suite > inner ok\n"
                                     "F suite > inner bad\n"
                                     "P suite > deeper > leaf\n"
                                     "P parent > child a\n");
    test_cases_release(&c);
}

static void test_bash_tap(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "bash_tap.txt");
    assert_string_equal(c.format, "tap");
    assert_string_equal(summary(&c), "P add 2 3\n"
                                     "F mul 2 3\n"
                                     "S network check\n"
                                     "S unicode names\n"
                                     "P parser > reads empty input\n"
                                     "F parser > reads # comments\n"
                                     "P 6\n");
    test_cases_release(&c);
}

static void test_tap_edge(void **state)
{
    static const char out[] = "ok\n"
                              "ok - x\n"
                              "not ok 3 - x\n"          /* a repeated id: FAIL wins */
                              "ok 4 - y # skip later\n" /* then passes: PASS wins over SKIP */
                              "ok 5 - y\n"
                              "ok 6 - issue #42 fixed\n" /* '#' not a directive */
                              "ok 7 - todo passes # TODO\n"
                              "  ---\n"
                              "  ok 99 - inside yaml\n"
                              "  ...\n"
                              "okay 8 - not a test point\n"
                              "    not ok 1 - sub fails\n"
                              "not ok 9 - parent\n" /* failed through its child only */
                              "    ok 1 - sub ok\n"
                              "not ok 10 - hooked\n"; /* failed by itself: a case too */
    struct test_cases c;
    (void)state;

    assert_int_equal(gates_parse_cases(&c, out, strlen(out), NULL, NULL, NULL, 0), 0);
    assert_string_equal(c.format, "tap");
    assert_string_equal(summary(&c), "P 1\n"
                                     "F x\n"
                                     "P y\n"
                                     "P issue #42 fixed\n"
                                     "P todo passes\n"
                                     "F parent > sub fails\n"
                                     "P hooked > sub ok\n"
                                     "F hooked\n");
    test_cases_release(&c);
}

static void test_ctest(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "ctest.txt");
    assert_string_equal(c.format, "ctest");
    assert_string_equal(summary(&c), "P passes\n"
                                     "F fails\n"
                                     "F slow.one\n"
                                     "F missing\n"
                                     "S skipper\n"
                                     "S off\n"
                                     "F segv\n"
                                     "P a_b_c_d_e\n"
                                     "P a_b_c_d_f\n"
                                     "P a_b_c_d_g\n"
                                     "P a_b_c_d_h\n");
    test_cases_release(&c);
}

/* cmocka's output (tests/fixtures/gates/cmocka: two executables ctest runs)
 * under `ctest -V`: each case inside its executable, an executable without
 * cases stays one. */
static void test_cmocka_ctest_v(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "cmocka_ctest_v.txt");
    assert_string_equal(c.format, "ctest+cmocka");
    assert_string_equal(summary(&c), "P test_math::test_add\n"
                                     "F test_math::test_sub\n"
                                     "S test_math::test_skip\n"
                                     "P test_math::test_same\n"
                                     "P test_str::test_len\n"
                                     "P test_str::test_same\n"
                                     "P plain\n");
    assert_false(c.incomplete);
    test_cases_release(&c);
    /* ctest -V -j3: the executables' lines interleave, their prefixes tell */
    parse_fixture(&c, "cmocka_ctest_v_j3.txt");
    assert_string_equal(summary(&c), "P test_math::test_add\n"
                                     "F test_math::test_sub\n"
                                     "S test_math::test_skip\n"
                                     "P test_math::test_same\n"
                                     "P test_str::test_len\n"
                                     "P test_str::test_same\n"
                                     "P plain\n");
    test_cases_release(&c);
    /* its TAP output, under ctest -V */
    parse_fixture(&c, "cmocka_tap_ctest_v.txt");
    assert_string_equal(c.format, "ctest+tap");
    assert_string_equal(summary(&c), "P test_math::test_add\n"
                                     "F test_math::test_sub\n"
                                     "S test_math::test_skip\n"
                                     "P test_math::test_same\n"
                                     "P test_str::test_len\n"
                                     "P test_str::test_same\n"
                                     "P plain\n");
    assert_false(c.incomplete);
    test_cases_release(&c);
}

/* --output-on-failure shows only the failed executable's cases: the list
 * is incomplete (nothing is called removed); plain ctest stays "ctest". */
static void test_cmocka_ctest_partial(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "cmocka_ctest_oof.txt");
    assert_string_equal(c.format, "ctest+cmocka");
    assert_string_equal(summary(&c), "P test_math::test_add\n"
                                     "F test_math::test_sub\n"
                                     "S test_math::test_skip\n"
                                     "P test_math::test_same\n"
                                     "P test_str\n"
                                     "P plain\n");
    assert_true(c.incomplete);
    test_cases_release(&c);
    parse_fixture(&c, "cmocka_ctest_plain.txt");
    assert_string_equal(c.format, "ctest");
    assert_string_equal(summary(&c), "F test_math\nP test_str\nP plain\n");
    test_cases_release(&c);
}

/* An executable run alone: plain names; its subunit output too. */
static void test_cmocka_alone(void **state)
{
    static const char started[] = "[ RUN      ] test_a\n[       OK ] test_a\n[ RUN      ] test_b\n"
                                  "Segmentation fault\n";
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "cmocka_alone.txt");
    assert_string_equal(c.format, "cmocka");
    assert_string_equal(summary(&c), "P test_add\nF test_sub\nS test_skip\nP test_same\n");
    test_cases_release(&c);
    parse_fixture(&c, "cmocka_subunit.txt");
    assert_string_equal(c.format, "subunit");
    assert_string_equal(summary(&c), "P test_add\nF test_sub\nS test_skip\nP test_same\n");
    test_cases_release(&c);
    /* a case that started and never ended failed */
    assert_int_equal(gates_parse_cases(&c, started, strlen(started), NULL, NULL, NULL, 0), 0);
    assert_string_equal(summary(&c), "P test_a\nF test_b\n");
    test_cases_release(&c);
}

/* Unity (hand-written from its documented format): alone, the file kept;
 * under ctest -V (as cJSON's tests print), one name in two executables
 * stays two cases, an executable without Unity lines is one, and one
 * ctest failed after all its cases passed (a crash) fails as itself. */
static void test_unity(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "unity_alone.txt");
    assert_string_equal(c.format, "unity");
    assert_string_equal(summary(&c), "P parse_number_should_parse_zero\n"
                                     "P parse_number_should_parse_negative_integers\n"
                                     "F parse_number_should_parse_positive_integers\n"
                                     "S parse_number_should_parse_big\n"
                                     "S parse_number_should_parse_real\n");
    assert_string_equal(file_of(&c, "parse_number_should_parse_zero"), "tests/parse_number.c");
    assert_false(c.incomplete);
    test_cases_release(&c);
    parse_fixture(&c, "unity_ctest_v.txt");
    assert_string_equal(c.format, "ctest+unity");
    assert_string_equal(summary(&c), "P parse_number::parse_number_should_parse_zero\n"
                                     "P parse_number::parse_number_should_parse_negative_integers\n"
                                     "F parse_number::parse_number_should_parse_hex\n"
                                     "P print_string::parse_number_should_parse_zero\n"
                                     "P print_string::print_string_should_print_empty_strings\n"
                                     "P misc_tests::cjson_array_foreach_should_loop_over_arrays\n"
                                     "P cJSON_test\n"
                                     "F misc_tests\n");
    assert_false(c.incomplete);
    test_cases_release(&c);
}

/* Check: CK_VERBOSE names every case (TCASE:test); CK_NORMAL only the
 * failures, which its "Checks: 4" shows: incomplete. */
static void test_check(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "check_verbose.txt");
    assert_string_equal(c.format, "check");
    assert_string_equal(summary(&c), "P Core:test_money_create\n"
                                     "F Core:test_money_neg\n"
                                     "F Limits:test_money_big\n"
                                     "P Limits:test_money_zero\n");
    assert_string_equal(file_of(&c, "Core:test_money_neg"), "tests/check_money.c");
    assert_false(c.incomplete);
    test_cases_release(&c);
    parse_fixture(&c, "check_normal.txt");
    assert_string_equal(summary(&c), "F Core:test_money_neg\n");
    assert_true(c.incomplete);
    test_cases_release(&c);
}

/* A run that names only ctest's executables is not compared per test
 * with one that names the cases inside them: the ids differ. */
static void test_compare_ctest_formats(void **state)
{
    struct test_cases base, now;
    struct case_diff d;
    (void)state;

    parse_fixture(&base, "cmocka_ctest_plain.txt");
    parse_fixture(&now, "cmocka_ctest_v.txt");
    assert_int_equal(gates_compare(&d, &base, &now), 0);
    assert_string_equal(d.granularity, "gate");
    case_diff_release(&d);
    assert_int_equal(gates_compare(&d, &now, &now), 0);
    assert_string_equal(d.granularity, "test");
    case_diff_release(&d);
    test_cases_release(&base);
    test_cases_release(&now);
}

static void test_cargo(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "cargo.txt");
    assert_string_equal(c.format, "cargo");
    assert_string_equal(summary(&c), "P tests::it_works\n"
                                     "S tests::net\n"
                                     "S tests::slow\n"
                                     "F tests::it_fails\n"
                                     "P integ\n"
                                     "P src/lib.rs - add (line 2)\n");
    assert_string_equal(file_of(&c, "tests::it_fails"), "src/lib.rs");
    assert_string_equal(file_of(&c, "integ"), "tests/it.rs");
    assert_string_equal(file_of(&c, "src/lib.rs - add (line 2)"), "(null)");
    test_cases_release(&c);
}

/* "Running unittests (x": the " (" that ends the file name is looked for
 * after "unittests ", not before it (found by fuzz_cases: the name's
 * length went below zero, and its copy read far out of the output). */
static void test_cargo_paren_before_name(void **state)
{
    static const char out[] = "     Running unittests (rc/lib.rs (target/debug/deps/cr-1)\n"
                              "test tests::a ... ok\n"
                              "test tests::b ... FAILED\n"
                              "     Running unittests (\n"
                              "test tests::c ... ok\n";
    struct test_cases c;
    (void)state;

    assert_int_equal(gates_parse_cases(&c, out, strlen(out), NULL, NULL, NULL, 0), 0);
    assert_string_equal(c.format, "cargo");
    assert_string_equal(summary(&c), "P tests::a\nF tests::b\nP tests::c\n");
    assert_string_equal(file_of(&c, "tests::b"), "(rc/lib.rs");
    assert_string_equal(file_of(&c, "tests::c"), "(");
    test_cases_release(&c);
}

static void test_go_json(void **state)
{
    struct test_cases c;
    (void)state;

    parse_fixture(&c, "go_json.txt");
    assert_string_equal(c.format, "go");
    assert_string_equal(summary(&c), "P example.com/calc::TestAdd\n"
                                     "F example.com/calc::TestDiv/by_zero\n"
                                     "P example.com/calc::TestDiv/simple\n"
                                     "F example.com/calc::TestDiv\n"
                                     "S example.com/calc::TestBig\n"
                                     "P example.com/calc/parse::TestAdd\n"
                                     "F example.com/calc/parse::TestHang\n"); /* never ended */
    test_cases_release(&c);
}

static void test_mixed_and_none(void **state)
{
    static const char mixed[] = "ok 1 - shell check\n"
                                "ok 2 - other check\n"
                                "tests/test_a.py::test_x PASSED [ 33%]\n"
                                "tests/test_a.py::test_y FAILED [ 66%]\n"
                                "tests/test_a.py::test_z PASSED [100%]\n";
    static const char none[] = "make: Nothing to be done for 'all'.\nbuild ok\n";
    struct test_cases c;
    struct test_counts k;
    char note[64] = "x";
    (void)state;

    assert_int_equal(gates_parse_cases(&c, mixed, strlen(mixed), NULL, NULL, NULL, 0), 0);
    assert_string_equal(c.format, "pytest"); /* the format with the most cases */
    assert_int_equal(c.n, 3);
    test_cases_release(&c);
    assert_int_equal(gates_parse_cases(&c, none, strlen(none), NULL, NULL, note, sizeof(note)), 0);
    assert_null(c.format);
    assert_int_equal(c.n, 0);
    assert_string_equal(note, "");
    gates_counts_from_cases(&k, &c);
    assert_null(k.format);
    assert_int_equal(k.total, -1);
    test_cases_release(&c);
}

/* ---- JUnit -------------------------------------------------------------- */

static void test_junit(void **state)
{
    static const char xml[] =
        "<?xml version=\"1.0\"?>\n<testsuites>\n"
        " <testsuite name=\"outer\">\n"
        "  <testsuite name=\"inner\">\n"
        "   <testcase classname=\"a.B\" name=\"ok\" file=\"a/b.py\"/>\n"
        "   <testcase classname=\"a.B\" name=\"fails\"><failure message=\"x\">trace"
        "</failure></testcase>\n"
        "  </testsuite>\n"
        "  <testcase name=\"bare &amp; errs\"><error/><system-out>ok</system-out></testcase>\n"
        "  <testcase classname=\"a.B\" name=\"skips\"><skipped/></testcase>\n"
        "  <testcase classname=\"a.B\" name=\"ok\"/>\n"
        " </testsuite>\n</testsuites>\n";
    struct test_cases c;
    (void)state;

    assert_int_equal(gates_parse_junit(&c, xml, strlen(xml)), 0);
    assert_string_equal(c.format, "junit");
    assert_string_equal(summary(&c), "P a.B::ok\nF a.B::fails\nF bare & errs\nS a.B::skips\n");
    assert_string_equal(file_of(&c, "a.B::ok"), "a/b.py");
    test_cases_release(&c);
    /* not well-formed: refused with the line */
    assert_int_equal(gates_parse_junit(&c, "<testsuite><testcase name='x'>", 30), ERR_INVALID);
    assert_non_null(strstr(err_last(), "not well-formed"));
    assert_int_equal(c.n, 0);
    assert_null(c.format);
}

static void test_junit_pytest_report(void **state)
{
    struct test_cases c;
    char note[256], path[600];
    size_t len;
    char *xml = fixture("pytest_junit.xml", &len);
    (void)state;

    testutil_tmp_path(path, sizeof(path), "wt-pytest/build");
    assert_int_equal(fs_mkdir_p(path, 0700), 0);
    testutil_tmp_path(path, sizeof(path), "wt-pytest/build/junit.xml");
    assert_int_equal(fs_write_atomic(path, xml, len, 0644), 0);
    testutil_tmp_path(path, sizeof(path), "wt-pytest");
    /* the report wins over the output's own cases */
    assert_int_equal(
        gates_parse_cases(&c, "ok 1 - a\n", 9, path, "build/junit.xml", note, sizeof(note)), 0);
    assert_string_equal(note, "");
    assert_string_equal(c.format, "junit");
    assert_string_equal(summary(&c), "P tests.test_a::test_pass\n"
                                     "F tests.test_a::test_fail\n"
                                     "S tests.test_a::test_skip\n"
                                     "S tests.test_a::test_xfail\n"
                                     "P tests.test_a::test_xpass\n"
                                     "F tests.test_a::test_error\n"
                                     "P tests.test_a::test_param[a b]\n"
                                     "F tests.test_a::test_param[c - d]\n"
                                     "P tests.test_a.TestK::test_m\n");
    test_cases_release(&c);
    free(xml);
}

/* Ids from a report file pass the redactor (the output is redacted before
 * it is parsed; the XML cannot be). */
static void test_report_ids_redacted(void **state)
{
    static const char xml[] = "<testsuite><testcase classname=\"t\" "
                              "name=\"uses ghp_0123456789abcdefghijABCDEFGHIJklmnop12\"/>"
                              "<testcase name=\"plain\"/></testsuite>";
    struct test_cases c;
    char root[512], path[600], note[256];
    (void)state;

    testutil_tmp_path(root, sizeof(root), "wt-redact");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    snprintf(path, sizeof(path), "%s/r.xml", root);
    assert_int_equal(fs_write_atomic(path, xml, strlen(xml), 0644), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "r.xml", note, sizeof(note)), 0);
    assert_string_equal(c.format, "junit");
    assert_string_equal(summary(&c), "P t::uses ***REDACTED***\nP plain\n");
    test_cases_release(&c);
}

/* The billion laughs: ten levels of ten references, 10^9 "lol"s. */
static void test_junit_entities_refused(void **state)
{
    strbuf sb;
    struct test_cases c;
    char root[512], path[600], secret[600], note[512];
    struct timespec t0, t1;
    (void)state;

    strbuf_init(&sb, 0);
    assert_int_equal(
        strbuf_adds(&sb, "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"), 0);
    for (int i = 1; i < 10; i++) {
        assert_int_equal(strbuf_addf(&sb, " <!ENTITY lol%d \"", i), 0);
        for (int k = 0; k < 10; k++)
            assert_int_equal(strbuf_addf(&sb, "&lol%.0d;", i - 1), 0);
        assert_int_equal(strbuf_adds(&sb, "\">\n"), 0);
    }
    assert_int_equal(strbuf_adds(&sb, "]>\n<testsuite><testcase name=\"&lol9;\"/></testsuite>\n"),
                     0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(gates_parse_junit(&c, sb.buf, sb.len), ERR_INVALID);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(err_last(), "entity declarations are not accepted"));
    assert_int_equal(c.n, 0);
    assert_true(t1.tv_sec - t0.tv_sec < 2);

    /* an external entity naming a host file: refused, its content nowhere */
    testutil_tmp_path(secret, sizeof(secret), "xxe-secret.txt");
    assert_int_equal(fs_write_atomic(secret, "TOPSECRET-xxe-4711", 18, 0600), 0);
    testutil_tmp_path(root, sizeof(root), "wt-xxe");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    strbuf_reset(&sb);
    assert_int_equal(
        strbuf_addf(&sb,
                    "<?xml version=\"1.0\"?>\n<!DOCTYPE t [<!ENTITY x SYSTEM \"file://%s\">]>\n"
                    "<testsuite><testcase name=\"&x;\"/></testsuite>\n",
                    secret),
        0);
    snprintf(path, sizeof(path), "%s/r.xml", root);
    assert_int_equal(fs_write_atomic(path, sb.buf, sb.len, 0644), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "r.xml", note, sizeof(note)), 0);
    assert_null(c.format);
    assert_non_null(strstr(note, "report r.xml ignored: XML entity declarations are not accepted"));
    assert_null(strstr(note, "TOPSECRET"));
    test_cases_release(&c);
    /* a parameter entity (no general entity declared) is refused as well */
    strbuf_reset(&sb);
    assert_int_equal(
        strbuf_addf(&sb, "<!DOCTYPE t [<!ENTITY %% p SYSTEM \"file://%s\"> %%p;]><t/>", secret), 0);
    assert_int_equal(gates_parse_junit(&c, sb.buf, sb.len), ERR_INVALID);
    strbuf_release(&sb);
}

/* ---- report files ------------------------------------------------------- */

static void test_report_fifo(void **state)
{
    struct test_cases c;
    char root[512], path[600], note[512];
    time_t t0;
    (void)state;

    testutil_tmp_path(root, sizeof(root), "wt-fifo");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    snprintf(path, sizeof(path), "%s/report.xml", root);
    assert_int_equal(mkfifo(path, 0644), 0);
    t0 = time(NULL);
    assert_int_equal(gates_parse_cases(&c, "ok 1 - a\n", 9, root, "report.xml", note, sizeof(note)),
                     0);
    assert_true(time(NULL) - t0 <= 1);
    assert_string_equal(note, "report report.xml ignored: report.xml: a fifo, not a regular file");
    assert_string_equal(c.format, "tap"); /* the output still counts */
    test_cases_release(&c);
}

static void test_report_symlink_out(void **state)
{
    static const char xml[] = "<testsuite><testcase name=\"PLANTED-SECRET-91\"/></testsuite>";
    struct test_cases c;
    char root[512], path[600], secret[600], note[512];
    (void)state;

    testutil_tmp_path(secret, sizeof(secret), "planted.xml");
    assert_int_equal(fs_write_atomic(secret, xml, strlen(xml), 0600), 0);
    testutil_tmp_path(root, sizeof(root), "wt-link");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    snprintf(path, sizeof(path), "%s/report.xml", root);
    assert_int_equal(symlink(secret, path), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "report.xml", note, sizeof(note)), 0);
    assert_null(c.format);
    assert_int_equal(c.n, 0);
    assert_non_null(strstr(note, "report report.xml ignored: report.xml:"));
    assert_null(strstr(note, "PLANTED"));
    test_cases_release(&c);
    /* through a linked folder, and by a relative link climbing out */
    snprintf(path, sizeof(path), "%s/out", root);
    assert_int_equal(symlink("..", path), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "out/planted.xml", note, sizeof(note)), 0);
    assert_null(c.format);
    assert_non_null(strstr(note, "ignored"));
    test_cases_release(&c);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "../planted.xml", note, sizeof(note)), 0);
    assert_null(c.format);
    assert_non_null(strstr(note, "ignored"));
    test_cases_release(&c);
    /* a link that stays inside the worktree is fine */
    snprintf(path, sizeof(path), "%s/real.xml", root);
    assert_int_equal(
        fs_write_atomic(path, "<testsuite><testcase name=\"in\"/></testsuite>", 44, 0644), 0);
    snprintf(path, sizeof(path), "%s/alias.xml", root);
    assert_int_equal(symlink("real.xml", path), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "alias.xml", note, sizeof(note)), 0);
    assert_string_equal(summary(&c), "P in\n");
    test_cases_release(&c);
}

static void test_report_oversized_and_odd(void **state)
{
    struct test_cases c;
    char root[512], path[600], note[512];
    int fd;
    (void)state;

    testutil_tmp_path(root, sizeof(root), "wt-big");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    snprintf(path, sizeof(path), "%s/big.xml", root);
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)GATES_REPORT_MAX + 1), 0); /* sparse */
    close(fd);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "big.xml", note, sizeof(note)), 0);
    assert_null(c.format);
    assert_non_null(strstr(note, "report big.xml ignored: big.xml: 33554433 bytes, more than"));
    test_cases_release(&c);
    /* a folder, a missing file, an empty file, garbage */
    snprintf(path, sizeof(path), "%s/dir.xml", root);
    assert_int_equal(fs_mkdir_p(path, 0700), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "dir.xml", note, sizeof(note)), 0);
    assert_non_null(strstr(note, "ignored"));
    test_cases_release(&c);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "none.xml", note, sizeof(note)), 0);
    assert_non_null(strstr(note, "report none.xml ignored: none.xml: no such file"));
    test_cases_release(&c);
    snprintf(path, sizeof(path), "%s/garbage.xml", root);
    assert_int_equal(fs_write_atomic(path, "\x01\x02<<<", 5, 0644), 0);
    assert_int_equal(gates_parse_cases(&c, "", 0, root, "garbage.xml", note, sizeof(note)), 0);
    assert_non_null(strstr(note, "not well-formed XML"));
    assert_null(c.format);
    test_cases_release(&c);
    /* a device, read directly */
    {
        strbuf sb;
        strbuf_init(&sb, 0);
        assert_int_equal(gates_report_read(&sb, "/dev", "null", 100), ERR_POLICY);
        assert_non_null(strstr(err_last(), "a character device"));
        strbuf_release(&sb);
    }
}

/* ---- comparison --------------------------------------------------------- */

/* Cases from "P a,F b,S c" (as TAP), their format set to format if given. */
static struct test_cases make(const char *format, const char *spec)
{
    struct test_cases c;
    char *text = strdup(spec), *save = NULL;
    strbuf tap;

    strbuf_init(&tap, 0);
    for (char *t = strtok_r(text, ",", &save); t; t = strtok_r(NULL, ",", &save))
        assert_int_equal(strbuf_addf(&tap, "%s %s%s\n", t[0] == 'F' ? "not ok -" : "ok -", t + 2,
                                     t[0] == 'S' ? " # SKIP" : ""),
                         0);
    free(text);
    assert_int_equal(gates_parse_cases(&c, strbuf_cstr(&tap), tap.len, NULL, NULL, NULL, 0), 0);
    strbuf_release(&tap);
    if (format && c.format)
        c.format = format;
    return c;
}

static const char *joined(char **v, size_t n)
{
    static char out[4][512];
    static int k;
    char *o = out[k++ % 4];
    size_t w = 0;

    o[0] = '\0';
    for (size_t i = 0; i < n; i++)
        w += (size_t)snprintf(o + w, 512 - w, "%s%s", i ? "," : "", v[i]);
    return o;
}

static void test_compare(void **state)
{
    struct test_cases base = make(NULL, "P keeps,P breaks,F still,F mended,P dropped,S skipped,"
                                        "S was_skipped,P later_skipped,F target_gone");
    struct test_cases now = make(NULL, "P keeps,F breaks,F still,P mended,F brand_new,"
                                       "F was_skipped,S later_skipped,S skipped");
    struct case_diff d;
    (void)state;

    assert_int_equal(gates_compare(&d, &base, &now), 0);
    assert_string_equal(d.granularity, "test");
    assert_string_equal(joined(d.introduced, d.n_introduced), "breaks");
    assert_string_equal(joined(d.pre_existing, d.n_pre_existing), "still");
    assert_string_equal(joined(d.fixed, d.n_fixed), "mended");
    assert_string_equal(joined(d.removed, d.n_removed), "dropped");
    /* a test failing at the baseline that no longer runs: a target gone */
    assert_string_equal(joined(d.removed_failing, d.n_removed_failing), "target_gone");
    assert_string_equal(joined(d.new_failing, d.n_new_failing), "brand_new,was_skipped");
    case_diff_release(&d);
    test_cases_release(&now);

    /* base with one failure, now with nine: eight introduced */
    {
        struct test_cases b1 = make(NULL, "F t0,P t1,P t2,P t3,P t4,P t5,P t6,P t7,P t8");
        struct test_cases n9 = make(NULL, "F t0,F t1,F t2,F t3,F t4,F t5,F t6,F t7,F t8");
        assert_int_equal(gates_compare(&d, &b1, &n9), 0);
        assert_int_equal(d.n_introduced, 8);
        assert_int_equal(d.n_pre_existing, 1);
        case_diff_release(&d);
        test_cases_release(&b1);
        test_cases_release(&n9);
    }

    /* no cases on one side, or different formats: whole-gate comparison */
    {
        struct test_cases none;
        memset(&none, 0, sizeof(none));
        assert_int_equal(gates_compare(&d, &none, &base), 0);
        assert_string_equal(d.granularity, "gate");
        assert_int_equal(d.n_introduced + d.n_removed + d.n_fixed + d.n_new_failing, 0);
        case_diff_release(&d);
        assert_int_equal(gates_compare(&d, &base, &none), 0);
        assert_string_equal(d.granularity, "gate");
        case_diff_release(&d);
        now = make("junit", "F keeps");
        assert_int_equal(gates_compare(&d, &base, &now), 0);
        assert_string_equal(d.granularity, "gate");
        assert_int_equal(d.n_introduced, 0);
        case_diff_release(&d);
        test_cases_release(&now);
    }
    test_cases_release(&base);
}

/* More than GATES_CASES_MAX cases: the rest is dropped, the list says so,
 * and a cut list reports nothing as removed. */
static void test_truncated(void **state)
{
    struct test_cases big, base;
    struct case_diff d;
    strbuf out;
    (void)state;

    strbuf_init(&out, 0);
    for (int i = 0; i <= GATES_CASES_MAX; i++)
        assert_int_equal(strbuf_addf(&out, "ok %d - t%d\n", i + 1, i), 0);
    assert_int_equal(gates_parse_cases(&big, out.buf, out.len, NULL, NULL, NULL, 0), 0);
    assert_int_equal(big.n, GATES_CASES_MAX);
    assert_int_equal(big.truncated, 1);
    base = make(NULL, "P t0,P gone");
    assert_int_equal(gates_compare(&d, &base, &big), 0);
    assert_string_equal(d.granularity, "test");
    assert_int_equal(d.n_removed, 0);
    case_diff_release(&d);
    test_cases_release(&base);
    test_cases_release(&big);
    strbuf_release(&out);
}

/* ---- gate_cases rows ----------------------------------------------------- */

static void test_store_roundtrip(void **state)
{
    static const char gid[] = "aaaaaaaa-0000-4000-8000-000000000001";
    struct gates_ctx ctx = {0};
    struct gate_result r;
    struct test_cases back;
    char path[600];
    store_stmt *s;
    store *st;
    int64_t id;
    strbuf out;
    (void)state;

    testutil_db(path, sizeof(path), "cases.db");
    assert_int_equal(store_open(&st, path), 0);
    assert_int_equal(store_prepare_uncached(st, &s,
                                            "INSERT INTO goals(id, title, spec, created_at, "
                                            "updated_at) VALUES (?, 't', '{}', 0, 0)"),
                     0);
    store_bind_text(s, 1, gid);
    assert_int_equal(store_step(s), STORE_DONE);
    store_finalize(s);
    ctx.st = st;
    ctx.goal_id = gid;

    /* GATES_CASES_STORED + 5 cases, the failing ones last in the output */
    strbuf_init(&out, 0);
    for (int i = 0; i < GATES_CASES_STORED; i++)
        assert_int_equal(strbuf_addf(&out, "ok %d - pass %d\n", i + 1, i), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(strbuf_addf(&out, "not ok %d - fail %d\n", GATES_CASES_STORED + i + 1, i),
                         0);
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "tests");
    snprintf(r.type, sizeof(r.type), "test");
    r.command = strdup("sh t.sh");
    r.output_tail = strdup("");
    assert_int_equal(gates_parse_cases(&r.cases, out.buf, out.len, NULL, NULL, NULL, 0), 0);
    assert_int_equal(r.cases.n, GATES_CASES_STORED + 5);
    gates_counts_from_cases(&r.counts, &r.cases);
    assert_int_equal(gates_store(&ctx, &r, "tree", &id), 0);
    assert_int_equal(
        store_prepare_uncached(st, &s,
                               "SELECT (SELECT count(*) FROM gate_cases WHERE "
                               "gate_result_id = ?1), (SELECT count(*) FROM gate_cases "
                               "WHERE gate_result_id = ?1 AND status = 'fail'), note, "
                               "tests_format, tests_failed FROM gate_results WHERE id = ?1"),
        0);
    store_bind_i64(s, 1, id);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_int_equal(store_col_int(s, 0), GATES_CASES_STORED);
    assert_int_equal(store_col_int(s, 1), 5); /* failures kept first */
    assert_string_equal(store_col_raw(s, 2), "20000 of 20005 test cases stored (failures first)");
    assert_string_equal(store_col_raw(s, 3), "tap");
    assert_int_equal(store_col_int(s, 4), 5);
    store_finalize(s);
    assert_int_equal(gates_cases_load(st, id, &back), 0);
    assert_string_equal(back.format, "tap");
    assert_int_equal(back.n, GATES_CASES_STORED);
    assert_string_equal(back.v[0].id, "fail 0");
    assert_int_equal(back.v[0].status, TEST_FAIL);
    test_cases_release(&back);
    /* deleting the result deletes its cases */
    assert_int_equal(store_exec(st, "DELETE FROM gate_results"), 0);
    assert_int_equal(store_prepare_uncached(st, &s, "SELECT count(*) FROM gate_cases"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_int_equal(store_col_int(s, 0), 0);
    store_finalize(s);
    gate_result_release(&r);
    strbuf_release(&out);
    store_close(st);
}

/* A list that names only some of what ran (pytest -q: failures only)
 * cannot say a test was removed: absence means nothing there. */
static void test_compare_incomplete(void **state)
{
    struct test_cases base = make(NULL, "F a,F b");
    struct test_cases now = make(NULL, "F a");
    struct case_diff d;
    (void)state;

    now.incomplete = 1;
    assert_int_equal(gates_compare(&d, &base, &now), 0);
    assert_int_equal(d.n_removed_failing + d.n_removed, 0);
    assert_string_equal(joined(d.pre_existing, d.n_pre_existing), "a");
    case_diff_release(&d);
    now.incomplete = 0;
    base.incomplete = 1;
    assert_int_equal(gates_compare(&d, &base, &now), 0);
    assert_int_equal(d.n_removed_failing + d.n_removed, 0);
    case_diff_release(&d);
    base.incomplete = 0;
    assert_int_equal(gates_compare(&d, &base, &now), 0);
    assert_string_equal(joined(d.removed_failing, d.n_removed_failing), "b");
    case_diff_release(&d);
    test_cases_release(&base);
    test_cases_release(&now);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytest_rA),
        cmocka_unit_test(test_pytest_v),
        cmocka_unit_test(test_unittest),
        cmocka_unit_test(test_compare_incomplete),
        cmocka_unit_test(test_instrument),
        cmocka_unit_test(test_node_tap),
        cmocka_unit_test(test_node_spec),
        cmocka_unit_test(test_node_tap_files),
        cmocka_unit_test(test_bash_tap),
        cmocka_unit_test(test_tap_edge),
        cmocka_unit_test(test_ctest),
        cmocka_unit_test(test_cmocka_ctest_v),
        cmocka_unit_test(test_cmocka_ctest_partial),
        cmocka_unit_test(test_cmocka_alone),
        cmocka_unit_test(test_unity),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_compare_ctest_formats),
        cmocka_unit_test(test_cargo),
        cmocka_unit_test(test_cargo_paren_before_name),
        cmocka_unit_test(test_go_json),
        cmocka_unit_test(test_mixed_and_none),
        cmocka_unit_test(test_junit),
        cmocka_unit_test(test_junit_pytest_report),
        cmocka_unit_test(test_junit_entities_refused),
        cmocka_unit_test(test_report_ids_redacted),
        cmocka_unit_test(test_report_fifo),
        cmocka_unit_test(test_report_symlink_out),
        cmocka_unit_test(test_report_oversized_and_odd),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_store_roundtrip),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
