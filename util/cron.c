#include "util/cron.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/err.h"
#include "util/timeutil.h"

struct field_def {
    const char *name;
    int lo, hi;
    const char *const *names; /* index 0 maps to lo */
};

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const struct field_def fields[5] = {
    {"minute", 0, 59, NULL},
    {"hour", 0, 23, NULL},
    {"day-of-month", 1, 31, NULL},
    {"month", 1, 12, month_names},
    {"day-of-week", 0, 7, dow_names},
};

static int parse_value(const struct field_def *f, const char **p, int *out)
{
    const char *s = *p;

    if (isdigit((unsigned char)*s)) {
        long v = 0;
        while (isdigit((unsigned char)*s)) {
            v = v * 10 + (*s - '0');
            if (v > 1000)
                break;
            s++;
        }
        if (v < f->lo || v > f->hi)
            return err_set(ERR_INVALID, "%s: %ld is out of range %d-%d", f->name, v, f->lo,
                           f->hi);
        *out = (int)v;
        *p = s;
        return 0;
    }
    if (f->names && isalpha((unsigned char)s[0]) && isalpha((unsigned char)s[1]) &&
        isalpha((unsigned char)s[2]) && !isalpha((unsigned char)s[3])) {
        for (int i = 0; f->names[i]; i++) {
            if (strncasecmp(s, f->names[i], 3) == 0) {
                *out = f->lo + i;
                *p = s + 3;
                return 0;
            }
        }
    }
    if (!*s)
        return err_set(ERR_INVALID, "%s: missing a value", f->name);
    {
        int n = (int)strcspn(s, ",-/");
        return err_set(ERR_INVALID, "%s: unexpected \"%.*s\"", f->name, n ? n : 1, s);
    }
}

/* One field: a comma list of "*", "N", "N-M", each optionally "/STEP". */
static int parse_field(const struct field_def *f, const char *text, uint64_t *bits, int *star)
{
    const char *p = text;

    *bits = 0;
    *star = 0;
    if (!*p)
        return err_set(ERR_INVALID, "%s: empty", f->name);
    for (;;) {
        int lo, hi, step = 1;
        int is_star = 0;
        int rc;

        if (*p == '*') {
            lo = f->lo;
            hi = f->hi == 7 ? 6 : f->hi;
            is_star = 1;
            p++;
        } else {
            if ((rc = parse_value(f, &p, &lo)) != 0)
                return rc;
            hi = lo;
            if (*p == '-') {
                p++;
                if ((rc = parse_value(f, &p, &hi)) != 0)
                    return rc;
                if (hi < lo)
                    return err_set(ERR_INVALID, "%s: range %d-%d is backwards", f->name, lo,
                                   hi);
            }
        }
        if (*p == '/') {
            long v = 0;
            p++;
            if (!isdigit((unsigned char)*p))
                return err_set(ERR_INVALID, "%s: expected a step after /", f->name);
            while (isdigit((unsigned char)*p) && v <= 1000)
                v = v * 10 + (*p++ - '0');
            if (v < 1 || v > f->hi)
                return err_set(ERR_INVALID, "%s: step %ld is out of range 1-%d", f->name, v,
                               f->hi);
            step = (int)v;
            if (!is_star && hi == lo) {
                hi = f->hi == 7 ? 6 : f->hi; /* "5/15" means 5-max/15 */
                if (hi < lo)
                    hi = lo; /* "7/2" (Sunday as 7): just 7, not nothing */
            }
        }
        if (is_star && step == 1)
            *star = 1;
        for (int v = lo; v <= hi; v += step)
            *bits |= (uint64_t)1 << (f->hi == 7 && v == 7 ? 0 : v);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p)
            return err_set(ERR_INVALID, "%s: unexpected \"%s\"", f->name, p);
        break;
    }
    return 0;
}

int cron_parse(struct cron_expr *out, const char *expr)
{
    static const struct {
        const char *alias;
        const char *expansion;
    } aliases[] = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
        {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"},
    };
    char buf[256];
    char *tok[6];
    int n = 0;
    char *save = NULL;
    uint64_t bits[5];
    int star[5];

    if (!expr)
        return err_set(ERR_INVALID, "empty schedule");
    while (isspace((unsigned char)*expr))
        expr++;
    if (expr[0] == '@') {
        for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
            if (strcasecmp(expr, aliases[i].alias) == 0)
                return cron_parse(out, aliases[i].expansion);
        return err_set(ERR_INVALID, "unknown alias \"%s\"", expr);
    }
    if (strlen(expr) >= sizeof(buf))
        return err_set(ERR_INVALID, "schedule too long");
    snprintf(buf, sizeof(buf), "%s", expr); /* truncation: ok, its length is checked above */
    for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (n == 5)
            return err_set(ERR_INVALID, "expected 5 fields, got more");
        tok[n++] = t;
    }
    if (n != 5)
        return err_set(ERR_INVALID, "expected 5 fields (minute hour day-of-month month "
                                    "day-of-week), got %d",
                       n);
    for (int i = 0; i < 5; i++) {
        int rc = parse_field(&fields[i], tok[i], &bits[i], &star[i]);
        if (rc)
            return rc;
    }
    memset(out, 0, sizeof(*out));
    out->minute = bits[0];
    out->hour = (uint32_t)bits[1];
    out->dom = (uint32_t)bits[2];
    out->month = (uint16_t)bits[3];
    out->dow = (uint8_t)bits[4];
    out->dom_star = star[2] || (bits[2] & 0xfffffffeu) == 0xfffffffeu;
    out->dow_star = star[4] || (bits[4] & 0x7f) == 0x7f;
    return 0;
}

static int days_in_month(int64_t y, unsigned m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return d[m - 1];
}

static int day_matches(const struct cron_expr *c, int64_t y, unsigned m, unsigned d,
                       int64_t days)
{
    int dow = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday (4) */
    int dom_ok = (c->dom >> d) & 1;
    int dow_ok = (c->dow >> dow) & 1;

    (void)y;
    (void)m;
    if (c->dom_star || c->dow_star)
        return dom_ok && dow_ok;
    return dom_ok || dow_ok; /* Vixie: either field when both are restricted */
}

int cron_next(const struct cron_expr *c, int64_t after, int utc_offset_min, int64_t *out)
{
    int64_t off_ms = (int64_t)utc_offset_min * 60000;
    int64_t local = after + off_ms;
    /* start at the next whole minute after `after` */
    int64_t min_total = (local >= 0 ? local / 60000 : (local - 59999) / 60000) + 1;
    int64_t days = min_total >= 0 ? min_total / 1440 : (min_total - 1439) / 1440;
    int start_min = (int)(min_total - days * 1440);
    int64_t y;
    unsigned m, d;

    time_civil_from_days(days, &y, &m, &d);
    /* search day by day; at most ~28 years covers every dom/dow/month combination */
    for (int iter = 0; iter < 366 * 28 + 10; iter++) {
        if (!((c->month >> m) & 1)) {
            /* jump to the first day of the next month */
            days += days_in_month(y, m) - (int)d + 1;
            time_civil_from_days(days, &y, &m, &d);
            start_min = 0;
            continue;
        }
        if (day_matches(c, y, m, d, days)) {
            for (int h = start_min / 60; h < 24; h++) {
                if (!((c->hour >> h) & 1))
                    continue;
                for (int mi = (h == start_min / 60 ? start_min % 60 : 0); mi < 60; mi++) {
                    if ((c->minute >> mi) & 1) {
                        *out = (days * 1440 + h * 60 + mi) * 60000 - off_ms;
                        return 0;
                    }
                }
            }
        }
        days++;
        time_civil_from_days(days, &y, &m, &d);
        start_min = 0;
    }
    return err_set(ERR_NOTFOUND, "the schedule never fires");
}

/* Time zones.  TZ is set for the process and the zone's rules come from
 * the C library (tzdata); the search below works on wall-clock ("naive")
 * minutes and maps each match back to UTC instants. */

/* The zone's UTC offset in minutes at t (ms). */
static int offset_at(int64_t t)
{
    time_t secs = (time_t)(t >= 0 ? t / 1000 : (t - 999) / 1000);
    struct tm tm;

    if (!localtime_r(&secs, &tm))
        return 0;
    return (int)(tm.tm_gmtoff / 60);
}

/* The distinct offsets in force within a day and a bit around t: *lo and
 * *hi receive the least and the greatest; returns how many (1 or more). */
static int offsets_near(int64_t t, int offs[5], int *lo, int *hi)
{
    int n = 0;

    for (int k = -2; k <= 2; k++) {
        int o = offset_at(t + k * 13 * 3600000LL), seen = 0;
        for (int i = 0; i < n; i++)
            seen |= offs[i] == o;
        if (!seen)
            offs[n++] = o;
    }
    *lo = *hi = offs[0];
    for (int i = 1; i < n; i++) {
        *lo = offs[i] < *lo ? offs[i] : *lo;
        *hi = offs[i] > *hi ? offs[i] : *hi;
    }
    return n;
}

/* The UTC instants whose wall-clock time is `wall` (naive ms): none in a
 * spring-forward gap, two in a fall-back overlap.  Ascending; returns how
 * many. */
static int wall_to_utc(int64_t wall, int64_t out[2])
{
    int offs[5], lo, hi, n = 0;
    int k = offsets_near(wall, offs, &lo, &hi);

    for (int i = 0; i < k && n < 2; i++) {
        int64_t u = wall - offs[i] * 60000LL;
        if (offset_at(u) == offs[i] && (n == 0 || out[0] != u))
            out[n++] = u;
    }
    if (n == 2 && out[1] < out[0]) {
        int64_t t = out[0];
        out[0] = out[1];
        out[1] = t;
    }
    return n;
}

/* For a wall-clock time in a gap: the instant of the change that skipped
 * it (the first instant whose wall clock is past it). */
static int64_t gap_end(int64_t wall)
{
    int offs[5], lo, hi;
    int64_t a, b;
    int before;

    offsets_near(wall, offs, &lo, &hi);
    a = wall - hi * 60000LL; /* before the change: wall clock short of `wall` */
    b = wall - lo * 60000LL; /* after it: wall clock past `wall` */
    before = offset_at(a);
    while (b - a > 1000) { /* changes fall on whole seconds */
        int64_t m = a + (b - a) / 2;
        if (offset_at(m) == before)
            a = m;
        else
            b = m;
    }
    return b;
}

int cron_zone_check(const char *tz)
{
    const char *dir = getenv("TZDIR");
    char path[512], magic[4];
    FILE *f;
    size_t got = 0;

    if (!tz || !strcmp(tz, "UTC"))
        return 0;
    if (!*tz || tz[0] == '/' || strstr(tz, ".."))
        goto bad;
    for (const char *p = tz; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/_+-", *p))
            goto bad;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo",
                         tz) >= sizeof(path))
        goto bad;
    if ((f = fopen(path, "rb")) != NULL) {
        got = fread(magic, 1, sizeof(magic), f);
        fclose(f);
    }
    if (got == sizeof(magic) && !memcmp(magic, "TZif", 4))
        return 0;
bad:
    return err_set(ERR_INVALID, "unknown time zone \"%s\" (expected UTC or an IANA name such as "
                                "Europe/Paris, from tzdata)",
                   tz);
}

int cron_zone_use(const char *tz)
{
    static char current[128];

    if (!tz || !*tz)
        tz = "UTC";
    if (strcmp(current, tz) != 0) {
        int rc = cron_zone_check(tz);
        if (rc)
            return rc;
        if (setenv("TZ", tz, 1) != 0)
            return err_set(ERR_IO, "setenv TZ: %s", strerror(errno));
        tzset();
        /* truncation: ok, a cache: a cut name only sets TZ again */
        snprintf(current, sizeof(current), "%s", tz);
    }
    return 0;
}

int cron_zone_offset(int64_t t)
{
    return offset_at(t);
}

int cron_next_tz(const struct cron_expr *c, int64_t after, const char *tz, int64_t *out)
{
    int offs[5], lo, hi, rc;
    int hour_star = (c->hour & 0xffffffu) == 0xffffffu;
    int64_t wall;

    if (!tz || !*tz || !strcmp(tz, "UTC"))
        return cron_next(c, after, 0, out);
    if ((rc = cron_zone_use(tz)) != 0)
        return rc;
    /* start from the earliest wall-clock reading `after` could have, so
     * that the second pass of a repeated hour is not missed */
    offsets_near(after, offs, &lo, &hi);
    wall = after + lo * 60000LL;
    for (int iter = 0; iter < 100000; iter++) {
        int64_t w, u[2];
        int n;

        if ((rc = cron_next(c, wall, 0, &w)) != 0)
            return rc;
        n = wall_to_utc(w, u);
        if (n == 0) {
            /* skipped by a spring-forward change: fire at the change */
            int64_t g = gap_end(w);
            if (g > after) {
                *out = g;
                return 0;
            }
        } else if (u[0] > after) {
            *out = u[0];
            return 0;
        } else if (n == 2 && hour_star && u[1] > after) {
            /* a repeated hour: an hourly schedule fires in both passes, a
             * fixed-hour one only in the first (as Vixie cron) */
            *out = u[1];
            return 0;
        }
        wall = w;
    }
    return err_set(ERR_NOTFOUND, "the schedule never fires");
}
