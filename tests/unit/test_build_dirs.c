/* Unit tests: a gate's build_dirs, checked in every plan and part of its
 * digest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "gates/gates.h"
#include "util/err.h"

static void test_check(void **state)
{
    static const char *const good[] = {"build", "out/obj", "b.d", "..x", ".gitx", "a/.b"};
    static const char *const bad[] = {"",         "/abs", "../x", "a/..", ".git",
                                      "x/.GIT/y", "a//b", "./a",  "a/",   "a\tb"};
    char why[256];

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(gates_build_dir_check(good[i], why, sizeof(why)), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gates_build_dir_check(bad[i], why, sizeof(why)), ERR_INVALID);
}

/* a plan (the model's too) with a bad build_dirs is refused, the entry
 * named; a good one is read */
static void test_plan(void **state)
{
    struct gate_plan p;

    (void)state;
    assert_int_equal(gates_plan_parse(&p, "[{\"name\":\"b\",\"command\":\"make\","
                                          "\"build_dirs\":[\"build\",\"../x\"]}]"),
                     ERR_INVALID);
    assert_non_null(strstr(err_last(), "verification[0].build_dirs[1]: a \"..\" component"));
    assert_int_equal(gates_plan_parse(&p, "[{\"name\":\"b\",\"command\":\"make\","
                                          "\"build_dirs\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}]"),
                     ERR_INVALID);
    assert_int_equal(gates_plan_parse(&p, "[{\"name\":\"b\",\"command\":\"make\","
                                          "\"build_dirs\":[\"out\",\"out/obj\"]}]"),
                     ERR_INVALID);
    assert_int_equal(gates_plan_parse(&p, "[{\"name\":\"b\",\"command\":\"make\","
                                          "\"build_dirs\":\"build\"}]"),
                     ERR_INVALID);
    assert_int_equal(gates_plan_parse(&p, "[{\"name\":\"b\",\"command\":\"make\","
                                          "\"build_dirs\":[\"build\",\"out/obj\"]}]"),
                     0);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.gates[0].n_build_dirs, 2);
    assert_string_equal(p.gates[0].build_dirs[1], "out/obj");
    gates_plan_release(&p);
}

/* build folders are part of the digest; none leaves it as it was */
static void test_digest(void **state)
{
    struct gate_spec g = {.name = "b", .type = "test", .command = "make", .must_pass = 1};
    char none[HASH_HEX_SIZE], one[HASH_HEX_SIZE], other[HASH_HEX_SIZE];

    (void)state;
    gates_run_env(none, &g);
    g.build_dirs[0] = "build";
    g.n_build_dirs = 1;
    gates_run_env(one, &g);
    g.build_dirs[0] = "out";
    gates_run_env(other, &g);
    assert_string_not_equal(none, one);
    assert_string_not_equal(one, other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_digest),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
