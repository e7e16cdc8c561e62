/*
 * retry.h - one retry policy for every call goald makes to a server that
 * may say when to come back (model providers, forges): the server's wait
 * from its response headers, exponential backoff with jitter otherwise,
 * a cap, and a time factor for tests.
 */
#ifndef GOALD_UTIL_RETRY_H
#define GOALD_UTIL_RETRY_H

#include <stddef.h>
#include <stdint.h>

/* How long a server asked us to wait, from response headers (names matched
 * case-insensitively): Retry-After (delta-seconds or an HTTP date),
 * retry-after-ms, OpenAI's x-ratelimit-reset-requests /
 * x-ratelimit-reset-tokens (durations like "1s", "6m0s", "20ms"; the
 * larger applies only when the matching x-ratelimit-remaining-* is 0, or
 * always for a 429), and the forges' x-ratelimit-reset (epoch seconds,
 * GitHub/Gitea) when x-ratelimit-remaining is 0.  now_s: the clock (for
 * dates and epochs).  Returns ms >= 0, or -1 when no header says anything.
 *
 * The response status is not a header: a caller that has a 429 passes it
 * as the pseudo-header ":status" (value "429"), which makes the OpenAI
 * resets apply whatever the remaining counts say.  Retry-After and
 * retry-after-ms win over the rate-limit resets (retry-after-ms, finer,
 * over Retry-After). */
int64_t retry_after_ms(const char *const *names, const char *const *values, size_t n,
                       int64_t now_s);

/* The wait before attempt n (1-based) of a retried call: the server's
 * (when >= 0) or exponential backoff from base_ms with jitter (between half
 * and all of base_ms * 2^(n-1)); either capped at cap_ms.  *give_up = 1
 * when the server's wait exceeds cap_ms (the caller then fails now with the
 * server's reason rather than sleeping an hour), else 0.  The result is
 * already multiplied by retry_time_scale(): sleep on it as is (the cap
 * compares unscaled times). */
int64_t retry_wait_ms(int64_t server_ms, int n, int64_t base_ms, int64_t cap_ms, int *give_up);

/* A factor for tests: GOALD_TIME_SCALE (e.g. 0.01) multiplies every wait;
 * 1 by default (and for a value that is not a number in (0, 1000]). */
double retry_time_scale(void);

/* A duration "6m0s", "1.5s", "20ms", "1h2m3s", or plain seconds "5":
 * 0 with *ms set, -1 when it is none of these. */
int retry_parse_duration(const char *s, int64_t *ms);

/* An HTTP date (IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850
 * "Sunday, 06-Nov-94 08:49:37 GMT", asctime "Sun Nov  6 08:49:37 1994"):
 * 0 with *epoch_s set, -1 otherwise. */
int retry_parse_http_date(const char *s, int64_t *epoch_s);

#endif
