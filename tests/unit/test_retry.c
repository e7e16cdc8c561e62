/* Unit tests: util/retry - the server's wait from headers (Retry-After in
 * seconds and as an HTTP date, retry-after-ms, OpenAI's reset durations,
 * the forges' epoch reset), backoff, the cap and give_up, GOALD_TIME_SCALE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "tests/unit/testutil.h"
#include "util/retry.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
/* 2024-01-01T00:00:00Z */
#define NOW 1704067200

static void test_retry_after_seconds(void **state)
{
    const char *n[] = {"Content-Type", "RETRY-AFTER"};
    const char *v[] = {"application/json", "5"};
    const char *n2[] = {"retry-after"};
    const char *v2[] = {"1.5"};
    const char *v3[] = {"soon"};
    (void)state;
    assert_int_equal(retry_after_ms(n, v, N(n), NOW), 5000);
    assert_int_equal(retry_after_ms(n2, v2, 1, NOW), 1500);
    assert_int_equal(retry_after_ms(n2, v3, 1, NOW), -1);
    assert_int_equal(retry_after_ms(n, v, 1, NOW), -1); /* only content-type */
    assert_int_equal(retry_after_ms(NULL, NULL, 0, NOW), -1);
}

static void test_retry_after_date(void **state)
{
    const char *n[] = {"Retry-After"};
    const char *imf[] = {"Mon, 01 Jan 2024 00:00:30 GMT"};
    const char *rfc850[] = {"Monday, 01-Jan-24 00:01:00 GMT"};
    const char *asct[] = {"Mon Jan  1 00:00:07 2024"};
    const char *past[] = {"Sun, 31 Dec 2023 23:00:00 GMT"};
    const char *bad[] = {"Mon, 41 Foo 2024 00:00:30 GMT"};
    int64_t e;
    (void)state;
    assert_int_equal(retry_after_ms(n, imf, 1, NOW), 30000);
    assert_int_equal(retry_after_ms(n, rfc850, 1, NOW), 60000);
    assert_int_equal(retry_after_ms(n, asct, 1, NOW), 7000);
    assert_int_equal(retry_after_ms(n, past, 1, NOW), 0);
    assert_int_equal(retry_after_ms(n, bad, 1, NOW), -1);
    assert_int_equal(retry_parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &e), 0);
    assert_int_equal(e, 784111777);
}

static void test_retry_after_ms_header(void **state)
{
    const char *n[] = {"Retry-After", "retry-after-ms"};
    const char *v[] = {"2", "1234.5"};
    (void)state;
    /* the finer one wins */
    assert_int_equal(retry_after_ms(n, v, 2, NOW), 1235);
    assert_int_equal(retry_after_ms(n + 1, v + 1, 1, NOW), 1235);
}

static void test_retry_openai_durations(void **state)
{
    int64_t ms;
    const char *n[] = {"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
                       "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"};
    const char *v_req0[] = {"0", "6m0s", "1000", "20ms"};
    const char *v_tok0[] = {"12", "6m0s", "0", "1s"};
    const char *v_none0[] = {"12", "6m0s", "5", "1s"};
    const char *n429[] = {":status", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
                          "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"};
    const char *v429[] = {"429", "12", "20ms", "5", "1s"};
    (void)state;
    assert_int_equal(retry_parse_duration("6m0s", &ms), 0);
    assert_int_equal(ms, 360000);
    assert_int_equal(retry_parse_duration("1s", &ms), 0);
    assert_int_equal(ms, 1000);
    assert_int_equal(retry_parse_duration("20ms", &ms), 0);
    assert_int_equal(ms, 20);
    assert_int_equal(retry_parse_duration("1h2m3.5s", &ms), 0);
    assert_int_equal(ms, 3723500);
    assert_int_equal(retry_parse_duration("7", &ms), 0);
    assert_int_equal(ms, 7000);
    assert_int_equal(retry_parse_duration("6x", &ms), -1);
    assert_int_equal(retry_parse_duration("", &ms), -1);
    assert_int_equal(retry_parse_duration("-1s", &ms), -1);
    /* only the exhausted one counts */
    assert_int_equal(retry_after_ms(n, v_req0, 4, NOW), 360000);
    assert_int_equal(retry_after_ms(n, v_tok0, 4, NOW), 1000);
    assert_int_equal(retry_after_ms(n, v_none0, 4, NOW), -1);
    /* a 429: the larger of both, whatever remains */
    assert_int_equal(retry_after_ms(n429, v429, 5, NOW), 1000);
}

static void test_retry_forge_reset(void **state)
{
    const char *n[] = {"X-RateLimit-Remaining", "X-RateLimit-Reset"};
    const char *v0[] = {"0", "1704070800"}; /* an hour later */
    const char *v5[] = {"5", "1704070800"};
    const char *n2[] = {"X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"};
    const char *v2[] = {"0", "1704070800", "60"};
    (void)state;
    assert_int_equal(retry_after_ms(n, v0, 2, NOW), 3600000);
    assert_int_equal(retry_after_ms(n, v5, 2, NOW), -1);
    assert_int_equal(retry_after_ms(n2, v2, 3, NOW), 60000); /* Retry-After first */
}

static void test_retry_wait_cap(void **state)
{
    int give_up = -1;
    (void)state;
    unsetenv("GOALD_TIME_SCALE");
    assert_int_equal(retry_wait_ms(5000, 1, 500, 60000, &give_up), 5000);
    assert_int_equal(give_up, 0);
    assert_int_equal(retry_wait_ms(3600000, 1, 500, 60000, &give_up), 60000);
    assert_int_equal(give_up, 1);
    assert_int_equal(retry_wait_ms(0, 3, 500, 60000, &give_up), 0);
    assert_int_equal(give_up, 0);
    /* backoff: base * 2^(n-1), between half and all of it, capped */
    for (int i = 0; i < 50; i++) {
        int64_t w1 = retry_wait_ms(-1, 1, 500, 30000, &give_up);
        int64_t w3 = retry_wait_ms(-1, 3, 500, 30000, &give_up);
        int64_t w9 = retry_wait_ms(-1, 9, 500, 30000, &give_up);
        assert_int_equal(give_up, 0);
        assert_true(w1 >= 250 && w1 <= 500);
        assert_true(w3 >= 1000 && w3 <= 2000);
        assert_true(w9 >= 15000 && w9 <= 30000);
    }
}

static void test_retry_time_scale(void **state)
{
    int give_up;
    (void)state;
    unsetenv("GOALD_TIME_SCALE");
    assert_true(retry_time_scale() == 1.0);
    setenv("GOALD_TIME_SCALE", "0.01", 1);
    assert_true(retry_time_scale() == 0.01);
    assert_int_equal(retry_wait_ms(5000, 1, 500, 60000, &give_up), 50);
    /* the cap compares unscaled times */
    assert_int_equal(retry_wait_ms(3600000, 1, 500, 60000, &give_up), 600);
    assert_int_equal(give_up, 1);
    setenv("GOALD_TIME_SCALE", "fast", 1);
    assert_true(retry_time_scale() == 1.0);
    setenv("GOALD_TIME_SCALE", "-2", 1);
    assert_true(retry_time_scale() == 1.0);
    unsetenv("GOALD_TIME_SCALE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after_seconds),   cmocka_unit_test(test_retry_after_date),
        cmocka_unit_test(test_retry_after_ms_header), cmocka_unit_test(test_retry_openai_durations),
        cmocka_unit_test(test_retry_forge_reset),     cmocka_unit_test(test_retry_wait_cap),
        cmocka_unit_test(test_retry_time_scale),
    };
    testutil_setup("retry");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
