/*
 * fuzz_cron - util/cron.c: cron_parse() on any text, and for expressions
 * that parse, cron_next() from a few starting points and UTC offsets.
 *
 * Invariants checked (beyond "no crash, no leak, no UB, terminates"):
 * - every time cron_next() returns is strictly after the one asked for,
 *   on a whole minute, and matches the parsed fields (checked here with an
 *   independent calendar, Vixie's day-of-month/day-of-week rule included);
 * - it is the first such time: when the gap is under three days, every
 *   minute in between is checked not to match;
 * - ERR_NOTFOUND ("never fires") only when no month allowed has a day
 *   allowed (e.g. "0 0 30 2 *");
 * - in a zone (cron_next_tz, Europe/Paris from just before its two
 *   daylight-saving changes of 2026): each time is after the one asked
 *   for, and its wall-clock time there matches the fields, or it is the
 *   instant of a change (a time the change skipped fires then).
 *
 * GOALD_FUZZ_CANARY=1 flips the "matches the parsed fields" check, so that
 * the first valid seed of the corpus fails: the proof that a broken
 * invariant fails the run (docs/fuzzing.md).
 */
#include <stdint.h>
#include <time.h>

#include "tests/fuzz/fuzz.h"
#include "util/cron.h"
#include "util/err.h"

static int canary;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    canary = fuzz_env_flag("GOALD_FUZZ_CANARY");
    return 0;
}

/* Howard Hinnant's civil_from_days, written here again on purpose: the
 * oracle must not share code with what it checks. */
static void civil(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;

    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int64_t floordiv(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Whether the local minute number (minutes since 1970-01-01 00:00 local)
 * matches c. */
static int matches(const struct cron_expr *c, int64_t minute_no)
{
    int64_t days = floordiv(minute_no, 1440);
    int mod = (int)(minute_no - days * 1440);
    int64_t y;
    int m, d;
    int dow = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01: Thursday */
    int dom_ok, dow_ok, day_ok;

    civil(days, &y, &m, &d);
    dom_ok = (int)((c->dom >> d) & 1);
    dow_ok = (c->dow >> dow) & 1;
    day_ok = c->dom_star || c->dow_star ? dom_ok && dow_ok : dom_ok || dow_ok;
    return ((c->minute >> (mod % 60)) & 1) && ((c->hour >> (mod / 60)) & 1) &&
           ((c->month >> m) & 1) && day_ok;
}

/* Whether some month allowed by c has a day allowed by c (ignoring the
 * day of the week when it is "*"). */
static int can_fire(const struct cron_expr *c)
{
    static const int mdays[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (!c->dow_star)
        return 1; /* some day of every month is any given weekday */
    for (int m = 1; m <= 12; m++)
        for (int d = 1; d <= mdays[m] && ((c->month >> m) & 1); d++)
            if ((c->dom >> d) & 1)
                return 1;
    return 0;
}

static void check_from(const struct cron_expr *c, const char *expr, int64_t after, int off)
{
    for (int k = 0; k < 4; k++) {
        int64_t next = 0;
        int rc = cron_next(c, after, off, &next);

        if (rc == ERR_NOTFOUND) {
            FUZZ_CHECK(!can_fire(c), "\"%s\" has a day to fire on but cron_next says never", expr);
            return;
        }
        FUZZ_CHECK(rc == 0, "\"%s\": cron_next returned %d", expr, rc);
        FUZZ_CHECK(next > after, "\"%s\": next %lld is not after %lld", expr, (long long)next,
                   (long long)after);
        FUZZ_CHECK(next % 60000 == 0, "\"%s\": next %lld is not on a minute", expr,
                   (long long)next);

        int64_t local_min = (next + (int64_t)off * 60000) / 60000;
        int64_t first = floordiv(after + (int64_t)off * 60000, 60000) + 1;

        FUZZ_CHECK(matches(c, local_min) != canary,
                   "\"%s\" (offset %d): next %lld does not match the fields", expr, off,
                   (long long)next);
        if (local_min - first < 3 * 1440)
            for (int64_t t = first; t < local_min; t++)
                FUZZ_CHECK(!matches(c, t), "\"%s\" (offset %d): minute %lld matches before %lld",
                           expr, off, (long long)t, (long long)local_min);
        after = next;
    }
}

static int zone_offset_s(int64_t t_ms)
{
    time_t secs = (time_t)floordiv(t_ms, 1000);
    struct tm tm;

    return localtime_r(&secs, &tm) ? (int)tm.tm_gmtoff : 0;
}

static void check_zone(const struct cron_expr *c, const char *expr)
{
    /* 2026-03-29T00:30Z and 2026-10-25T00:30Z: 30 minutes before the changes */
    static const int64_t starts[] = {1774744200000LL, 1792888200000LL};

    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
        int64_t after = starts[i];
        for (int k = 0; k < 4; k++) {
            int64_t next = 0;
            int rc = cron_next_tz(c, after, "Europe/Paris", &next);

            if (rc == ERR_NOTFOUND) {
                FUZZ_CHECK(!can_fire(c), "\"%s\" in Europe/Paris: never, but it has a day", expr);
                return;
            }
            FUZZ_CHECK(rc == 0, "\"%s\": cron_next_tz returned %d", expr, rc);
            FUZZ_CHECK(next > after, "\"%s\" in Europe/Paris: next %lld is not after %lld", expr,
                       (long long)next, (long long)after);
            int off = zone_offset_s(next);
            int at_change = zone_offset_s(next - 1000) != off;
            FUZZ_CHECK(matches(c, floordiv(next + off * 1000LL, 60000)) != canary || at_change,
                       "\"%s\" in Europe/Paris: next %lld does not match the fields", expr,
                       (long long)next);
            after = next;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 1970, just before it, 2000-02-29, 2023, 2100-02-28 (no leap day) */
    static const int64_t starts[] = {0, -1, 951782400000LL, 1700000000123LL, 4107456000000LL};
    static const int offsets[] = {0, 330, -600, 840};
    struct cron_expr c;
    char *expr = fuzz_cstr(data, size);

    if (!expr)
        return -1;
    if (cron_parse(&c, expr) == 0) {
        FUZZ_CHECK(c.minute && c.hour && c.dom && c.month && c.dow,
                   "\"%s\" parsed with an empty field", expr);
        FUZZ_CHECK(c.minute >> 60 == 0 && c.hour >> 24 == 0 && (c.dom & 1) == 0 &&
                       c.month >> 13 == 0 && (c.month & 1) == 0 && c.dow >> 7 == 0,
                   "\"%s\" parsed with a value out of range", expr);
        for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
            check_from(&c, expr, starts[i], offsets[i % 4]);
        check_zone(&c, expr);
    } else {
        FUZZ_CHECK(err_last()[0] != '\0', "\"%s\" refused without a message", expr);
    }
    free(expr);
    return 0;
}
