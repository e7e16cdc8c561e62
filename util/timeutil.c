#include "util/timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/err.h"

int64_t time_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Howard Hinnant's civil-calendar algorithms. */
int64_t time_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void time_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

char *time_format_rfc3339(char *out, size_t n, int64_t ms)
{
    return time_format_rfc3339_offset(out, n, ms, 0);
}

static char *format(char *out, size_t n, int64_t ms, int offset_min, int always_ms);

char *time_format_rfc3339_ms(char *out, size_t n, int64_t ms)
{
    return format(out, n, ms, 0, 1);
}

char *time_format_rfc3339_offset(char *out, size_t n, int64_t ms, int offset_min)
{
    return format(out, n, ms, offset_min, 0);
}

static char *format(char *out, size_t n, int64_t ms, int offset_min, int always_ms)
{
    int64_t local = ms + (int64_t)offset_min * 60000;
    int64_t secs = local >= 0 ? local / 1000 : (local - 999) / 1000;
    int64_t frac = local - secs * 1000;
    int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    int64_t rem = secs - days * 86400;
    int64_t y;
    unsigned mo, d;
    char fs[8] = "", zone[8] = "Z";

    time_civil_from_days(days, &y, &mo, &d);
    /* by hand rather than two more snprintf calls: reports format a time
     * per row */
    if (frac || always_ms) {
        fs[0] = '.';
        fs[1] = (char)('0' + frac / 100);
        fs[2] = (char)('0' + frac / 10 % 10);
        fs[3] = (char)('0' + frac % 10);
        fs[4] = '\0';
    }
    if (offset_min) {
        int a = (offset_min < 0 ? -offset_min : offset_min) % (100 * 60);
        zone[0] = offset_min < 0 ? '-' : '+';
        zone[1] = (char)('0' + a / 600);
        zone[2] = (char)('0' + a / 60 % 10);
        zone[3] = ':';
        zone[4] = (char)('0' + a % 60 / 10);
        zone[5] = (char)('0' + a % 10);
        zone[6] = '\0';
    }
    /* truncation: ok, out holds TIME_RFC3339_MAX bytes (the header) */
    snprintf(out, n, "%04lld-%02u-%02uT%02d:%02d:%02d%s%s", (long long)y, mo, d,
             (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), fs, zone);
    return out;
}

static int parse_digits(const char **p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* "YYYY-MM-DD", then the 'T' (or 't', or ' ') before the time. */
static int parse_date(const char **p, int *y, int *mo, int *d)
{
    if (parse_digits(p, 4, y) || *(*p)++ != '-' || parse_digits(p, 2, mo) || *(*p)++ != '-' ||
        parse_digits(p, 2, d))
        return -1;
    if (**p != 'T' && **p != 't' && **p != ' ')
        return -1;
    (*p)++;
    return 0;
}

/* "hh:mm:ss" and an optional fraction of any length, kept to milliseconds. */
static int parse_clock(const char **p, int *h, int *mi, int *sec, int64_t *frac_ms)
{
    int digits = 0;

    if (parse_digits(p, 2, h) || *(*p)++ != ':' || parse_digits(p, 2, mi) || *(*p)++ != ':' ||
        parse_digits(p, 2, sec))
        return -1;
    *frac_ms = 0;
    if (**p != '.')
        return 0;
    (*p)++;
    if (!isdigit((unsigned char)**p))
        return -1;
    while (isdigit((unsigned char)**p)) {
        if (digits < 3)
            *frac_ms = *frac_ms * 10 + (**p - '0');
        digits++;
        (*p)++;
    }
    for (; digits < 3; digits++)
        *frac_ms *= 10;
    return 0;
}

/* "Z" or "+hh:mm" / "-hh:mm" ending the string: the offset east of UTC in
 * seconds. */
static int parse_zone(const char **p, int *offset_s)
{
    int oh, om, sign;

    *offset_s = 0;
    if (**p == 'Z' || **p == 'z') {
        (*p)++;
    } else if (**p == '+' || **p == '-') {
        sign = **p == '+' ? 1 : -1;
        (*p)++;
        if (parse_digits(p, 2, &oh) || *(*p)++ != ':' || parse_digits(p, 2, &om))
            return -1;
        if (oh > 23 || om > 59)
            return -1;
        *offset_s = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    return **p == '\0' ? 0 : -1;
}

/* Whether the fields name a real date and time (second 60: a leap second). */
static int date_valid(int y, int mo, int d, int h, int mi, int sec)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
        return 0;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 0;
    return 1;
}

int time_parse_rfc3339(int64_t *out, const char *s)
{
    const char *p = s;
    int y, mo, d, h, mi, sec, offset_s;
    int64_t frac_ms, days, t;

    if (!s)
        return ERR_INVALID;
    if (parse_date(&p, &y, &mo, &d) || parse_clock(&p, &h, &mi, &sec, &frac_ms) ||
        parse_zone(&p, &offset_s) || !date_valid(y, mo, d, h, mi, sec))
        return ERR_INVALID;
    if (sec == 60)
        sec = 59; /* leap second: clamp, SQLite-style */
    days = time_days_from_civil(y, (unsigned)mo, (unsigned)d);
    t = days * 86400 + h * 3600 + mi * 60 + sec;
    t -= offset_s;
    *out = t * 1000 + frac_ms;
    return 0;
}

void time_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}
