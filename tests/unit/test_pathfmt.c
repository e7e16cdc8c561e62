/* Unit tests: path_fmt, paths that fail rather than come out cut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "util/err.h"
#include "util/path.h"
#include "util/url.h"

/* A path that fits is written whole, and one byte less room than it
 * needs (its NUL) is a failure. */
static void test_path_fmt_fits(void **state)
{
    char out[16];

    (void)state;
    assert_int_equal(path_fmt(out, sizeof(out), "%s/%s", "/tmp", "a.log"), 0);
    assert_string_equal(out, "/tmp/a.log");
    /* 15 bytes and its NUL: exactly the room there is */
    assert_int_equal(path_fmt(out, sizeof(out), "%s/%s", "/tmp/abcd", "efghi"), 0);
    assert_string_equal(out, "/tmp/abcd/efghi");
}

/* A path one byte too long fails with ERR_INVALID naming it, and what
 * is left in out is "", never the cut path (which names another file). */
static void test_path_fmt_cut_fails(void **state)
{
    char out[16];

    (void)state;
    memset(out, 'x', sizeof(out));
    err_clear();
    assert_int_equal(path_fmt(out, sizeof(out), "%s/%s", "/tmp/abcd", "efghij"), ERR_INVALID);
    assert_string_equal(out, "");
    assert_int_equal(err_last_code(), ERR_INVALID);
    assert_non_null(strstr(err_last(), "path too long: /tmp/abcd/efghi"));
    assert_non_null(strstr(err_last(), "16 bytes, at most 15"));
    /* a cut folder would be the folder above: ".../goald" for ".../goald2" */
    assert_int_equal(path_fmt(out, 11, "%s/%s", "/var/lib", "goald2"), ERR_INVALID);
    assert_string_equal(out, "");
}

/* No room at all is a failure too, and touches nothing. */
static void test_path_fmt_no_room(void **state)
{
    char out[4] = "abc";

    (void)state;
    assert_int_equal(path_fmt(out, 0, "%s", ""), ERR_INVALID);
    assert_string_equal(out, "abc");
    assert_int_equal(path_fmt(out, 1, "%s", ""), 0);
    assert_string_equal(out, "");
    assert_int_equal(path_fmt(out, 1, "%s", "a"), ERR_INVALID);
}

/* A caller: a resolved path that does not fit is no answer, never the
 * folder above it ("/usr/bin" cut to "/usr" is beneath "/usr" too). */
static void test_path_under_never_cut(void **state)
{
    char m[5];

    (void)state;
    assert_false(url_path_under("/usr/bin", "/usr", m, sizeof(m)));
    assert_true(url_path_under("/usr", "/usr", m, sizeof(m)));
    assert_string_equal(m, "/usr");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_fmt_fits),
        cmocka_unit_test(test_path_fmt_cut_fails),
        cmocka_unit_test(test_path_fmt_no_room),
        cmocka_unit_test(test_path_under_never_cut),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
