/*
 * retry.c - the retry policy shared by the model client and the forges:
 * the server's wait from its headers, backoff with jitter, a cap.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/id.h"
#include "util/retry.h"
#include "util/timeutil.h"

double retry_time_scale(void)
{
    const char *v = getenv("GOALD_TIME_SCALE");
    char *end;
    double f;

    if (!v || !*v)
        return 1.0;
    f = strtod(v, &end);
    if (*end || !(f > 0.0) || f > 1000.0)
        return 1.0;
    return f;
}

/* the smallest whole number >= d (d >= 0 and small enough) */
static int64_t up(double d)
{
    int64_t i = (int64_t)d;
    return (double)i < d ? i + 1 : i;
}

int retry_parse_duration(const char *s, int64_t *ms)
{
    double total = 0.0;
    int parts = 0;

    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return -1;
    while (*s && *s != ' ' && *s != '\t') {
        char *end;
        double v;

        if (!isdigit((unsigned char)*s) && *s != '.')
            return -1;
        v = strtod(s, &end);
        if (end == s || !(v >= 0.0) || v > 1e9)
            return -1;
        s = end;
        if (!strncmp(s, "ms", 2)) {
            total += v;
            s += 2;
        } else if (*s == 'h') {
            total += v * 3600000.0;
            s++;
        } else if (*s == 'm') {
            total += v * 60000.0;
            s++;
        } else if (*s == 's') {
            total += v * 1000.0;
            s++;
        } else if (!*s || *s == ' ' || *s == '\t') {
            if (parts)
                return -1; /* "6m5": a bare number only alone */
            total += v * 1000.0;
        } else
            return -1;
        parts++;
    }
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s || total > 1e15)
        return -1;
    *ms = up(total);
    return 0;
}

int retry_parse_http_date(const char *s, int64_t *epoch_s)
{
    time_t t;

    /* the three HTTP date forms (RFC 9110 5.6.7), parsed by libcurl, which
     * has the reader for them already */
    if (!s || !*s || (t = curl_getdate(s, NULL)) == (time_t)-1)
        return -1;
    *epoch_s = (int64_t)t;
    return 0;
}

static const char *header(const char *const *names, const char *const *values, size_t n,
                          const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] && values[i] && !strcasecmp(names[i], name))
            return values[i];
    return NULL;
}

/* "0" (after spaces) */
static int is_zero(const char *v)
{
    char *end;
    double d;

    if (!v)
        return 0;
    d = strtod(v, &end);
    return end != v && d == 0.0;
}

int64_t retry_after_ms(const char *const *names, const char *const *values, size_t n,
                       int64_t now_s)
{
    const char *v, *st;
    int64_t best = -1, ms, when;
    int is429;
    char *end;

    if ((v = header(names, values, n, "retry-after-ms"))) {
        double d = strtod(v, &end);
        if (end != v && d >= 0 && d < 1e15)
            return up(d);
    }
    if ((v = header(names, values, n, "retry-after"))) {
        while (*v == ' ')
            v++;
        if (isdigit((unsigned char)*v)) {
            double d = strtod(v, &end);
            while (*end == ' ')
                end++;
            if (end != v && !*end && d >= 0 && d < 1e12)
                return up(d * 1000.0);
        } else if (retry_parse_http_date(v, &when) == 0)
            return when > now_s ? (when - now_s) * 1000 : 0;
    }

    st = header(names, values, n, ":status");
    is429 = st && atoi(st) == 429;
    {
        static const char *const kind[][2] = {
            {"x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"},
            {"x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"},
        };
        for (size_t k = 0; k < 2; k++) {
            v = header(names, values, n, kind[k][0]);
            if (!v || retry_parse_duration(v, &ms) != 0)
                continue;
            if (is429 || is_zero(header(names, values, n, kind[k][1])))
                if (ms > best)
                    best = ms;
        }
    }
    if (best >= 0)
        return best;

    /* GitHub/Gitea: x-ratelimit-reset is the epoch second the window opens */
    v = header(names, values, n, "x-ratelimit-reset");
    if (v && is_zero(header(names, values, n, "x-ratelimit-remaining"))) {
        long long e = strtoll(v, &end, 10);
        if (end != v && e > 0)
            return e > now_s ? (int64_t)(e - now_s) * 1000 : 0;
    }
    return -1;
}

int64_t retry_wait_ms(int64_t server_ms, int n, int64_t base_ms, int64_t cap_ms, int *give_up)
{
    int64_t d;
    double scaled;

    *give_up = 0;
    if (cap_ms < 0)
        cap_ms = 0;
    if (server_ms >= 0) {
        d = server_ms;
        if (d > cap_ms) {
            *give_up = 1;
            d = cap_ms;
        }
    } else {
        unsigned r = 0;
        d = base_ms > 0 ? base_ms : 0;
        for (int i = 1; i < n && d < cap_ms; i++)
            d *= 2;
        if (d > cap_ms)
            d = cap_ms;
        /* jitter: between half and all of it, so that many jobs do not
         * retry in step */
        id_random(&r, sizeof(r));
        d = d / 2 + (d > 1 ? (int64_t)(r % (unsigned)(d / 2 + 1)) : 0);
    }
    scaled = (double)d * retry_time_scale();
    return (int64_t)scaled;
}
