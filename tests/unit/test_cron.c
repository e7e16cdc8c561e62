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
#include "util/xalloc.h"

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

/* A configured time zone: fire times are wall-clock times there, with
 * Vixie cron's rules across daylight-saving changes. */
struct zrow {
    const char *expr, *tz, *from;
    const char *next[4];
};

static void test_zone_table(void **state)
{
    static const struct zrow rows[] = {
        /* spring forward (Paris, 02:00 -> 03:00 on 29 March 2026): a time in
         * the skipped hour fires at the change */
        {"30 2 * * *", "Europe/Paris", "2026-03-27T00:00:00Z",
         {"2026-03-27T02:30:00+01:00", "2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00",
          "2026-03-30T02:30:00+02:00"}},
        {"*/15 * * * *", "Europe/Paris", "2026-03-29T00:40:00Z",
         {"2026-03-29T01:45:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00",
          "2026-03-29T03:30:00+02:00"}},
        /* fall back (Paris, 03:00 -> 02:00 on 25 October 2026): a fixed hour
         * fires once, in the first pass; an hourly schedule in both */
        {"30 2 * * *", "Europe/Paris", "2026-10-23T00:00:00Z",
         {"2026-10-23T02:30:00+02:00", "2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00",
          "2026-10-26T02:30:00+01:00"}},
        {"0 * * * *", "Europe/Paris", "2026-10-24T23:30:00Z",
         {"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00",
          "2026-10-25T04:00:00+01:00"}},
        {"*/20 2 * * *", "Europe/Paris", "2026-10-24T23:30:00Z",
         {"2026-10-25T02:00:00+02:00", "2026-10-25T02:20:00+02:00", "2026-10-25T02:40:00+02:00",
          "2026-10-26T02:00:00+01:00"}},
        /* New York: weekdays at 9 across the change of 8 March 2026 */
        {"0 9 * * MON-FRI", "America/New_York", "2026-03-06T00:00:00Z",
         {"2026-03-06T09:00:00-05:00", "2026-03-09T09:00:00-04:00", "2026-03-10T09:00:00-04:00",
          "2026-03-11T09:00:00-04:00"}},
        {"30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z",
         {"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00",
          "2026-11-03T01:30:00-05:00"}},
        /* a half-hour offset, no daylight saving */
        {"0 9 * * *", "Asia/Kolkata", "2026-11-23T04:00:00Z",
         {"2026-11-24T09:00:00+05:30", "2026-11-25T09:00:00+05:30", "2026-11-26T09:00:00+05:30",
          "2026-11-27T09:00:00+05:30"}},
        /* a half-hour change (Lord Howe, 02:00 -> 02:30 on 4 October 2026) */
        {"15 2 * * *", "Australia/Lord_Howe", "2026-10-02T00:00:00Z",
         {"2026-10-03T02:15:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00",
          "2026-10-06T02:15:00+11:00"}},
        /* month ends and Feb 29 in a zone east of UTC */
        {"0 0 29 2 *", "Asia/Tokyo", "2027-01-01T00:00:00Z",
         {"2028-02-29T00:00:00+09:00", "2032-02-29T00:00:00+09:00", "2036-02-29T00:00:00+09:00",
          "2040-02-29T00:00:00+09:00"}},
        {"0 9 31 * *", "America/Los_Angeles", "2026-10-01T00:00:00Z",
         {"2026-10-31T09:00:00-07:00", "2026-12-31T09:00:00-08:00", "2027-01-31T09:00:00-08:00",
          "2027-03-31T09:00:00-07:00"}},
        /* UTC through the same function */
        {"0 9 * * *", "UTC", "2026-10-24T23:30:00Z",
         {"2026-10-25T09:00:00Z", "2026-10-26T09:00:00Z", "2026-10-27T09:00:00Z",
          "2026-10-28T09:00:00Z"}},
    };
    (void)state;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct cron_expr c;
        int64_t t;
        char buf[TIME_RFC3339_MAX];

        if (!rows[i].tz)
            continue;
        if (cron_parse(&c, rows[i].expr) != 0)
            fail_msg("%s: %s", rows[i].expr, err_last());
        assert_int_equal(time_parse_rfc3339(&t, rows[i].from), 0);
        for (int k = 0; k < 4; k++) {
            if (cron_next_tz(&c, t, rows[i].tz, &t) != 0)
                fail_msg("%s in %s: %s", rows[i].expr, rows[i].tz, err_last());
            time_format_rfc3339_offset(buf, sizeof(buf), t,
                                       strcmp(rows[i].tz, "UTC") ? cron_zone_offset(t) : 0);
            if (strcmp(buf, rows[i].next[k]) != 0)
                fail_msg("%s in %s from %s: fire %d: expected %s, got %s", rows[i].expr,
                         rows[i].tz, rows[i].from, k + 1, rows[i].next[k], buf);
        }
    }
}

static void test_zone_names(void **state)
{
    static const char *const bad[] = {"Nope/Nowhere", "../../etc/passwd", "/etc/localtime",
                                      "Europe/Paris ", "", "Europe"};
    struct cron_expr c;
    int64_t t = 0;
    (void)state;

    assert_int_equal(cron_zone_check("UTC"), 0);
    assert_int_equal(cron_zone_check("Europe/Paris"), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (cron_zone_check(bad[i]) != ERR_INVALID)
            fail_msg("accepted the zone \"%s\"", bad[i]);
        assert_non_null(strstr(err_last(), "unknown time zone"));
    }
    /* glibc would read an unknown TZ as UTC: cron_next_tz refuses it */
    assert_int_equal(cron_parse(&c, "0 9 * * *"), 0);
    assert_int_equal(cron_next_tz(&c, 0, "Mars/Olympus", &t), ERR_INVALID);
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
        cmocka_unit_test(test_zone_table),
        cmocka_unit_test(test_zone_names),
        cmocka_unit_test(test_never_and_errors),
    };
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
