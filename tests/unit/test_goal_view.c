/* Unit tests: a goal's success criteria and elaboration parsed once
 * (lifecycle/goal_view.c): the fields the stages read, and one error
 * naming the goal and the column for a malformed one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "lifecycle/goal_view.h"
#include "store/goal.h"
#include "util/err.h"
#include "util/xalloc.h"

static void test_criteria(void **state)
{
    struct criteria c;

    (void)state;
    assert_int_equal(criteria_parse(&c, "[\"tests pass\", \"ms('') throws\", \"\"]"), 0);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.text[0], "tests pass");
    assert_string_equal(c.text[1], "ms('') throws");
    assert_string_equal(c.text[2], "");
    criteria_release(&c);
    assert_int_equal(c.n, 0);
    assert_null(c.text);

    /* a goal with no criteria column, or an empty list: none */
    assert_int_equal(criteria_parse(&c, NULL), 0);
    assert_int_equal(c.n, 0);
    criteria_release(&c);
    assert_int_equal(criteria_parse(&c, "[]"), 0);
    assert_int_equal(c.n, 0);
    criteria_release(&c);
}

static void test_criteria_malformed(void **state)
{
    static const struct {
        const char *json, *msg;
    } cases[] = {
        {"[\"tests pass\"", "not valid JSON"},
        {"{\"a\": 1}", "expected an array of strings"},
        {"\"tests pass\"", "expected an array of strings"},
        {"[\"tests pass\", 3]", "element 1: expected a string"},
        {"[null]", "element 0: expected a string"},
    };
    struct criteria c;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(criteria_parse(&c, cases[i].json), ERR_INVALID);
        assert_string_equal(err_last(), cases[i].msg);
        assert_int_equal(c.n, 0);
        assert_null(c.text);
        criteria_release(&c);
    }
}

static void test_elaboration(void **state)
{
    struct elaboration e;

    (void)state;
    assert_int_equal(elaboration_parse(&e, NULL), 0);
    assert_int_equal(e.present, 0);
    assert_null(e.verification_source);
    assert_null(e.for_plan);
    elaboration_release(&e);

    assert_int_equal(
        elaboration_parse(&e, "{\"components\":[\"parser\"],\"implicit_requirements\":[],"
                              "\"success_criteria\":[\"tests pass\"],\"allowed_actions\":null,"
                              "\"verification\":[{\"name\":\"test\",\"command\":\"make check\"}],"
                              "\"verification_source\":\"detected+model\"}"),
        0);
    assert_int_equal(e.present, 1);
    assert_string_equal(e.verification_source, "detected+model");
    /* the plan prompt's view: the criteria and the source left out, the
     * rest in its order */
    assert_string_equal(e.for_plan,
                        "{\"components\":[\"parser\"],\"implicit_requirements\":[],"
                        "\"allowed_actions\":null,"
                        "\"verification\":[{\"name\":\"test\",\"command\":\"make check\"}]}");
    elaboration_release(&e);
    assert_int_equal(e.present, 0);

    /* an elaboration of before verification_source: it says nothing of
     * where the gates came from; nor does a source that is not a string */
    assert_int_equal(elaboration_parse(&e, "{\"components\":[]}"), 0);
    assert_int_equal(e.present, 1);
    assert_null(e.verification_source);
    assert_string_equal(e.for_plan, "{\"components\":[]}");
    elaboration_release(&e);
    assert_int_equal(elaboration_parse(&e, "{\"verification_source\":7}"), 0);
    assert_null(e.verification_source);
    assert_string_equal(e.for_plan, "{}");
    elaboration_release(&e);
}

static void test_elaboration_malformed(void **state)
{
    struct elaboration e;

    (void)state;
    assert_int_equal(elaboration_parse(&e, "{\"components\":"), ERR_INVALID);
    assert_string_equal(err_last(), "not valid JSON");
    assert_int_equal(e.present, 0);
    elaboration_release(&e);
    assert_int_equal(elaboration_parse(&e, "[1]"), ERR_INVALID);
    assert_string_equal(err_last(), "expected an object");
    assert_int_equal(e.present, 0);
    assert_null(e.for_plan);
    elaboration_release(&e);
}

/* goal_view_load: one error naming the goal and the column. */
static void test_load(void **state)
{
    char two[] = "[\"a\",\"b\"]", cut[] = "[\"a\",", one[] = "[\"a\"]";
    char elab[] = "{\"verification_source\":\"goal\"}", text[] = "\"elaborated\"";
    struct goal g;
    struct criteria c;
    struct elaboration e;

    (void)state;
    memset(&g, 0, sizeof(g));
    snprintf(g.id, sizeof(g.id), "0123abcd");
    g.success_criteria = two;
    g.elaboration = elab;
    assert_int_equal(goal_view_load(&c, &e, &g), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.text[1], "b");
    assert_string_equal(e.verification_source, "goal");
    criteria_release(&c);
    elaboration_release(&e);

    g.success_criteria = cut;
    assert_int_equal(goal_view_load(&c, &e, &g), ERR_INVALID);
    assert_string_equal(err_last(), "goal 0123abcd: success_criteria: not valid JSON");
    criteria_release(&c);
    elaboration_release(&e);

    g.success_criteria = one;
    g.elaboration = text;
    assert_int_equal(goal_view_load(&c, &e, &g), ERR_INVALID);
    assert_string_equal(err_last(), "goal 0123abcd: elaboration: expected an object");
    criteria_release(&c);
    elaboration_release(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_criteria),
        cmocka_unit_test(test_criteria_malformed),
        cmocka_unit_test(test_elaboration),
        cmocka_unit_test(test_elaboration_malformed),
        cmocka_unit_test(test_load),
    };
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
