/* Unit tests: cron expressions -> next fire times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "util/cron.h"
#include "util/err.h"
#include "util/timeutil.h"

struct row {
    const char *expr;
    const char *from;
    const char *next[3];
};

static void test_next_table(void **state)
{
    static const struct row rows[] = {
        {"* * * * *", "2026-11-22T04:06:58Z",
         {"2026-11-22T04:07:00Z", "2026-11-22T04:08:00Z", "2026-11-22T04:09:00Z"}},
        {"0 9 * * 1", "2026-11-22T00:00:00Z", /* Sunday -> Mondays */
         {"2026-11-23T09:00:00Z", "2026-11-30T09:00:00Z", "2026-12-07T09:00:00Z"}},
        {"0 9 * * MON", "2026-11-23T09:00:00Z", /* strictly after */
         {"2026-11-30T09:00:00Z", "2026-12-07T09:00:00Z", "2026-12-14T09:00:00Z"}},
        {"*/15 * * * *", "2026-11-22T04:06:00Z",
         {"2026-11-22T04:15:00Z", "2026-11-22T04:30:00Z", "2026-11-22T04:45:00Z"}},
        {"5-10/5 1 * * *", "2026-11-22T00:00:00Z",
         {"2026-11-22T01:05:00Z", "2026-11-22T01:10:00Z", "2026-11-23T01:05:00Z"}},
        {"0 0 31 * *", "2026-01-31T00:00:00Z", /* months with 31 days only */
         {"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"}},
        {"0 12 29 2 *", "2026-01-01T00:00:00Z", /* Feb 29: leap years only */
         {"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z", "2036-02-29T12:00:00Z"}},
        {"0 0 29 FEB *", "2096-03-01T00:00:00Z", /* 2100 is not a leap year */
         {"2104-02-29T00:00:00Z", "2108-02-29T00:00:00Z", "2112-02-29T00:00:00Z"}},
        /* day-of-month OR day-of-week when both are restricted (Vixie) */
        {"0 0 13 * FRI", "2026-11-01T00:00:00Z",
         {"2026-11-06T00:00:00Z", "2026-11-13T00:00:00Z", "2026-11-20T00:00:00Z"}},
        {"0 0 1,15 * *", "2026-11-02T00:00:00Z",
         {"2026-11-15T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-15T00:00:00Z"}},
        /* a restricted dom with dow "*" is an AND with everything: the dom */
        {"30 6 1 * *", "2026-12-31T23:59:00Z",
         {"2027-01-01T06:30:00Z", "2027-02-01T06:30:00Z", "2027-03-01T06:30:00Z"}},
        {"0 0 * JAN-MAR SUN", "2026-12-31T00:00:00Z",
         {"2027-01-03T00:00:00Z", "2027-01-10T00:00:00Z", "2027-01-17T00:00:00Z"}},
        {"0 0 * * 7", "2026-11-22T00:00:00Z", /* 7 is Sunday too */
         {"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"}},
        {"0 0 * * 7/3", "2026-11-22T00:00:00Z", /* from 7 stepping: Sunday, not never */
         {"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"}},
        {"@hourly", "2026-11-22T04:06:00Z",
         {"2026-11-22T05:00:00Z", "2026-11-22T06:00:00Z", "2026-11-22T07:00:00Z"}},
        {"@daily", "2026-11-22T04:06:00Z",
         {"2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"}},
        {"@weekly", "2026-11-22T04:06:00Z", /* Sundays 00:00 */
         {"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"}},
        {"@monthly", "2026-11-22T04:06:00Z",
         {"2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"}},
        {"59 23 31 12 *", "2026-12-31T23:59:00Z",
         {"2027-12-31T23:59:00Z", "2028-12-31T23:59:00Z", "2029-12-31T23:59:00Z"}},
    };
    (void)state;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct cron_expr c;
        int64_t t;
        char buf[TIME_RFC3339_MAX];

        if (cron_parse(&c, rows[i].expr) != 0)
            fail_msg("%s: %s", rows[i].expr, err_last());
        assert_int_equal(time_parse_rfc3339(&t, rows[i].from), 0);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(cron_next(&c, t, 0, &t), 0);
            time_format_rfc3339(buf, sizeof(buf), t);
            if (strcmp(buf, rows[i].next[k]) != 0)
                fail_msg("%s from %s: fire %d: expected %s, got %s", rows[i].expr,
                         rows[i].from, k + 1, rows[i].next[k], buf);
        }
    }
}

static void test_offset(void **state)
{
    struct cron_expr c;
    int64_t t;
    char buf[TIME_RFC3339_MAX];
    (void)state;

    /* 09:00 at UTC+02:00 is 07:00Z */
    assert_int_equal(cron_parse(&c, "0 9 * * *"), 0);
    assert_int_equal(time_parse_rfc3339(&t, "2026-11-22T00:00:00Z"), 0);
    assert_int_equal(cron_next(&c, t, 120, &t), 0);
    assert_string_equal(time_format_rfc3339(buf, sizeof(buf), t), "2026-11-22T07:00:00Z");
}

static void test_never_and_errors(void **state)
{
    static const struct {
        const char *expr, *msg;
    } bad[] = {
        {"", "expected 5 fields (minute hour day-of-month month day-of-week), got 0"},
        {"* * * * * *", "expected 5 fields, got more"},
        {"60 * * * *", "minute: 60 is out of range 0-59"},
        {"* 24 * * *", "hour: 24 is out of range 0-23"},
        {"* * 0 * *", "day-of-month: 0 is out of range 1-31"},
        {"* * * 13 *", "month: 13 is out of range 1-12"},
        {"* * * * 8", "day-of-week: 8 is out of range 0-7"},
        {"5-1 * * * *", "minute: range 5-1 is backwards"},
        {"*/0 * * * *", "minute: step 0 is out of range 1-59"},
        {"* * * FOO *", "month: unexpected \"FOO\""},
        {"@sometimes", "unknown alias \"@sometimes\""},
        {"1,,2 * * * *", "minute: unexpected \",\""},
        {"1- * * * *", "minute: missing a value"},
    };
    struct cron_expr c;
    int64_t t;
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (cron_parse(&c, bad[i].expr) != ERR_INVALID)
            fail_msg("accepted \"%s\"", bad[i].expr);
        if (strcmp(err_last(), bad[i].msg) != 0)
            fail_msg("\"%s\": expected %s, got %s", bad[i].expr, bad[i].msg, err_last());
    }
    assert_int_equal(cron_parse(&c, "0 0 30 2 *"), 0);
    assert_int_equal(cron_next(&c, 0, 0, &t), ERR_NOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_table),
        cmocka_unit_test(test_offset),
        cmocka_unit_test(test_never_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
