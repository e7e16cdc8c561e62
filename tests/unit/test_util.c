/* Unit tests: strbuf caps, RFC 3339, the JSON writer, config table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/testutil.h"
#include "util/config.h"
#include "util/err.h"
#include "util/jsonobj.h"
#include "util/jsonw.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/url.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/* The cut family appends what fits, never splits a character, and says
 * whether it cut. */
static void test_strbuf_cut(void **state)
{
    strbuf sb;

    (void)state;
    strbuf_init(&sb, 8);
    assert_int_equal(strbuf_adds_cut(&sb, "abc"), 0);
    assert_int_equal(strbuf_addf_cut(&sb, "%d", 12), 0);
    assert_string_equal(strbuf_cstr(&sb), "abc12");
    /* 2 bytes of room; the euro sign (3 bytes) is not split */
    assert_int_equal(strbuf_adds_cut(&sb, "d\xe2\x82\xac"), 1);
    assert_string_equal(strbuf_cstr(&sb), "abc12d");
    assert_int_equal(strbuf_addf_cut(&sb, "%s", "xyz"), 1);
    assert_string_equal(strbuf_cstr(&sb), "abc12dxy");
    assert_int_equal(strbuf_adds_cut(&sb, "z"), 1);
    assert_int_equal(strbuf_adds_cut(&sb, ""), 0);
    assert_int_equal((int)sb.len, 8);
    strbuf_release(&sb);
}

static void test_strbuf_cap(void **state)
{
    strbuf sb;
    (void)state;

    strbuf_init(&sb, 8);
    assert_int_equal(strbuf_adds(&sb, "12345678"), 0);
    assert_int_equal(strbuf_adds(&sb, "9"), ERR_TOOBIG);
    assert_string_equal(strbuf_cstr(&sb), "12345678");
    strbuf_reset(&sb);
    assert_int_equal(strbuf_addf(&sb, "%d-%s", 42, "x"), 0);
    assert_string_equal(strbuf_cstr(&sb), "42-x");
    assert_int_equal(strbuf_addf(&sb, "%s", "toolong"), ERR_TOOBIG);
    strbuf_release(&sb);
    assert_string_equal(strbuf_cstr(&sb), "");
}

static void test_rfc3339(void **state)
{
    int64_t t;
    char buf[TIME_RFC3339_MAX];
    (void)state;

    assert_int_equal(time_parse_rfc3339(&t, "2026-12-01T18:00:00Z"), 0);
    assert_int_equal(t, 1796148000000LL);
    assert_string_equal(time_format_rfc3339(buf, sizeof(buf), t), "2026-12-01T18:00:00Z");
    assert_int_equal(time_parse_rfc3339(&t, "2026-12-01T20:00:00.250+02:00"), 0);
    assert_int_equal(t, 1796148000250LL);
    assert_string_equal(time_format_rfc3339(buf, sizeof(buf), t), "2026-12-01T18:00:00.250Z");
    assert_int_equal(time_parse_rfc3339(&t, "2024-02-29T00:00:00Z"), 0);
    assert_int_equal(time_parse_rfc3339(&t, "2025-02-29T00:00:00Z"), ERR_INVALID);
    assert_int_equal(time_parse_rfc3339(&t, "2026-13-01T00:00:00Z"), ERR_INVALID);
    assert_int_equal(time_parse_rfc3339(&t, "2026-12-01"), ERR_INVALID);
    assert_int_equal(time_parse_rfc3339(&t, "2026-12-01T18:00:00Zjunk"), ERR_INVALID);
    assert_string_equal(time_format_rfc3339(buf, sizeof(buf), 0), "1970-01-01T00:00:00Z");
}

static void test_jsonw(void **state)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    struct jsonw w;
    cJSON *v;
    (void)state;

    jsonw_init(&w, f);
    jsonw_object_begin(&w);
    jsonw_key(&w, "s");
    jsonw_string(&w, "q\"b\\s\n\x01t");
    jsonw_key(&w, "a");
    jsonw_array_begin(&w);
    jsonw_int(&w, -3);
    jsonw_double(&w, 36.4);
    jsonw_bool(&w, 1);
    jsonw_null(&w);
    jsonw_string(&w, NULL);
    jsonw_array_end(&w);
    jsonw_key(&w, "o");
    jsonw_object_begin(&w);
    jsonw_object_end(&w);
    jsonw_key(&w, "r");
    jsonw_raw(&w, "[1,2]");
    jsonw_object_end(&w);
    fclose(f);
    assert_string_equal(text,
                        "{\"s\":\"q\\\"b\\\\s\\n\\u0001t\",\"a\":[-3,36.4,true,null,null],"
                        "\"o\":{},\"r\":[1,2]}");
    v = cJSON_Parse(text);
    assert_non_null(v);
    assert_string_equal(cJSON_GetObjectItem(v, "s")->valuestring, "q\"b\\s\n\x01t");
    cJSON_Delete(v);
    free(text);
}

static void test_config_file_and_env(void **state)
{
    char path[512];
    FILE *f;
    (void)state;

    testutil_tmp_path(path, sizeof(path), "config.json");
    f = fopen(path, "w");
    fputs("{\"store\": {\"busy_timeout_ms\": 2500}, \"intake.max_title\": 50}", f);
    fclose(f);
    unsetenv("GOALD_STORE_BUSY_TIMEOUT_MS");
    assert_int_equal(config_load(path), 0);
    assert_int_equal(config_int(CFG_STORE_BUSY_TIMEOUT_MS), 2500);
    assert_string_equal(config_source(CFG_STORE_BUSY_TIMEOUT_MS), "file");
    assert_int_equal(config_int(CFG_INTAKE_MAX_TITLE), 50);
    setenv("GOALD_STORE_BUSY_TIMEOUT_MS", "700", 1);
    assert_int_equal(config_load(path), 0);
    assert_int_equal(config_int(CFG_STORE_BUSY_TIMEOUT_MS), 700);
    assert_string_equal(config_source(CFG_STORE_BUSY_TIMEOUT_MS), "env");
    setenv("GOALD_STORE_BUSY_TIMEOUT_MS", "abc", 1);
    assert_int_equal(config_load(path), ERR_INVALID);
    assert_string_equal(err_last(),
                        "GOALD_STORE_BUSY_TIMEOUT_MS: expected an integer, got \"abc\"");
    assert_int_equal(config_int(CFG_STORE_BUSY_TIMEOUT_MS), 700); /* unchanged */
    unsetenv("GOALD_STORE_BUSY_TIMEOUT_MS");

    f = fopen(path, "w");
    fputs("{\"store\": {\"busy_timeout\": 1}}", f);
    fclose(f);
    assert_int_equal(config_load(path), ERR_INVALID);
    assert_non_null(strstr(err_last(), "config.json: store.busy_timeout: unknown setting"));
    f = fopen(path, "w");
    fputs("{\"store\": {\"busy_timeout_ms\": -5}}", f);
    fclose(f);
    assert_int_equal(config_load(path), ERR_INVALID);
    assert_non_null(strstr(err_last(), "store.busy_timeout_ms: expected an integer from 0 to "
                                       "600000, got -5"));
    config_reset();
    assert_int_equal(config_int(CFG_STORE_BUSY_TIMEOUT_MS), 10000);
}

static void test_utf8_cuts(void **state)
{
    (void)state;
    /* "a" "é" (2 bytes) "€" (3 bytes) "😀" (4 bytes) */
    const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    size_t len = strlen(s);
    uint32_t cp = 0;

    assert_int_equal(len, 10);
    assert_int_equal(utf8_count(s, len), 4);
    assert_int_equal(utf8_cut_back(s, 2), 1);  /* inside é */
    assert_int_equal(utf8_cut_back(s, 3), 3);  /* é whole */
    assert_int_equal(utf8_cut_back(s, 5), 3);  /* inside € */
    assert_int_equal(utf8_cut_back(s, 9), 6);  /* inside the emoji */
    assert_int_equal(utf8_cut_back(s, 0), 0);
    assert_int_equal(utf8_cut_forward(s, 2, len), 3);
    assert_int_equal(utf8_cut_forward(s, 7, len), 10);
    assert_int_equal(utf8_cut_forward(s, 7, 8), 8); /* never past len */
    assert_int_equal(utf8_offset(s, len, 2), 3);
    assert_int_equal(utf8_offset(s, len, 3), 6);
    assert_int_equal(utf8_offset(s, len, 9), len);
    assert_int_equal(utf8_decode(s + 1, len - 1, &cp), 2);
    assert_int_equal(cp, 0xe9);
    assert_int_equal(utf8_decode(s + 6, len - 6, &cp), 4);
    assert_int_equal(cp, 0x1f600);
    assert_int_equal(utf8_decode(s + 6, 3, &cp), 0);          /* truncated */
    assert_int_equal(utf8_decode("\xc0\xaf", 2, &cp), 0);     /* overlong */
    assert_int_equal(utf8_decode("\xed\xa0\x80", 3, &cp), 0); /* surrogate */
    assert_int_equal(utf8_decode("\xf4\x90\x80\x80", 4, &cp), 0); /* > U+10FFFF */
    assert_int_equal(utf8_decode("\x80", 1, &cp), 0);
}

/* Invalid bytes counted and replaced; a capped text fits its cap, note
 * included, cut on a boundary, and is not cut again. */
static void test_utf8_valid_and_cap(void **state)
{
    strbuf sb = STRBUF_INIT;
    size_t n = 9;
    char big[100], *c, *again;
    cJSON *o;
    (void)state;
    assert_int_equal(utf8_invalid_count("a\xc3\xa9" "b", 4), 0);
    assert_int_equal(utf8_invalid_count("a\xff\xfe\xc3", 4), 3);
    assert_int_equal(utf8_sanitize(&sb, "x\xffy", 3, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(strbuf_cstr(&sb), "x\xef\xbf\xbdy");
    strbuf_release(&sb);
    c = utf8_cap_dup("short", 5, 80);
    assert_string_equal(c, "short");
    free(c);
    for (int i = 0; i < 99; i += 2)
        memcpy(big + i, "\xc3\xa9", 2);
    big[99] = '\0'; /* 49 characters and a lone lead byte */
    c = utf8_cap_dup(big, 99, 60);
    assert_true(strlen(c) <= 60);
    assert_non_null(strstr(c, " \xe2\x80\xa6 [cut by goald: 99 bytes, kept "));
    assert_int_equal(utf8_invalid_count(c, strlen(c)), 0);
    again = utf8_cap_dup(c, strlen(c), 60);
    assert_string_equal(again, c);
    free(again);
    free(c);
    o = cJSON_Parse("{\"a\":[\"0123456789012345678901234567890123456789012345678901234567890123456789\"],"
                    "\"b\":\"ok\"}");
    assert_true(jsonobj_has_long_string(o, 60));
    assert_int_equal(jsonobj_cap_strings(o, 60), 1);
    assert_false(jsonobj_has_long_string(o, 60));
    assert_string_equal(cJSON_GetObjectItem(o, "b")->valuestring, "ok");
    cJSON_Delete(o);
}

/* Credentials in git URLs: refused forms, kept forms, the masked text;
 * prefixes at a boundary; plain text only. */
static void test_url(void **state)
{
    static const char *const secret[] = {
        "https://user:TOKEN@host/o/r.git", "https://TOKEN@host/o/r.git", "HTTP://TOKEN@host/r",
        "ssh://git:TOKEN@host/r", "user:TOKEN@host:o/r.git", "https://host/r?access_token=TOKEN",
        "https://host/r?a=1&private_token=TOKEN", "https://host/r?token=TOKEN#x",
        "https://u%3ATOKEN@host/r", "git://host/r#auth=TOKEN", NULL};
    static const char *const fine[] = {"ssh://git@host/o/r.git", "git@github.com:o/r.git",
                                       "https://host/o/r.git", "/srv/a:b@c", "file:///srv/r",
                                       "https://host/r?ref=main", "git@host:o/r@v2", NULL};
    char m[256];
    (void)state;
    for (int i = 0; secret[i]; i++) {
        assert_int_equal(url_has_credential(secret[i]), 1);
        url_mask(m, sizeof(m), secret[i]);
        assert_null(strstr(m, "TOKEN"));
        assert_non_null(strstr(m, "***"));
    }
    for (int i = 0; fine[i]; i++) {
        assert_int_equal(url_has_credential(fine[i]), 0);
        assert_string_equal(url_mask(m, sizeof(m), fine[i]), fine[i]);
    }
    assert_string_equal(url_mask(m, sizeof(m), "https://alice:pw@h/r"), "https://***@h/r");
    assert_string_equal(url_mask(m, sizeof(m), "ssh://git:pw@h/r"), "ssh://git:***@h/r");
    assert_string_equal(url_mask(m, sizeof(m), "https://h/r?x=1&token=abc&y=2"),
                        "https://h/r?x=1&token=***&y=2");
    assert_true(url_under_prefix("https://h/team/r.git", "https://h/team/"));
    assert_true(url_under_prefix("https://h/team/r.git", "https://h/team"));
    assert_false(url_under_prefix("https://h/team-evil/r.git", "https://h/team"));
    assert_false(url_under_prefix("https://h.evil/r", "https://h"));
    assert_true(url_under_prefix("git@h:team/r", "git@h:team/"));
    assert_true(url_is_plain("https://h/team/r.git"));
    assert_false(url_is_plain("https://h/team/../x"));
    assert_false(url_is_plain("https://h/team/%2e%2E/x"));
    assert_false(url_is_plain("git@h:../x"));
    assert_false(url_is_plain("https://h/team/..%2fx"));
    assert_false(url_is_plain("https://h/a\\b"));
    assert_true(url_path_under("/usr/bin", "/usr", m, sizeof(m)));
    assert_true(url_path_under("/usr", "/usr", NULL, 0));
    assert_false(url_path_under("/usr/../etc", "/usr", NULL, 0));
    assert_false(url_path_under("/usr", "/us", NULL, 0));
    assert_false(url_path_under("/nonexistent-x", "/", NULL, 0));
}

static void test_xalloc(void **state)
{
    char *a = xstrdup("abc"), *b = xstrndup("abcdef", 2);
    int *z = xcalloc(4, sizeof(int));
    (void)state;
    assert_string_equal(a, "abc");
    assert_string_equal(b, "ab");
    assert_int_equal(z[3], 0);
    assert_null(xstrdup(NULL));
    z = xrealloc(z, 64 * sizeof(int));
    z[63] = 7;
    assert_ptr_equal(xcheck(a), a);
    free(a);
    free(b);
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strbuf_cap),
        cmocka_unit_test(test_strbuf_cut),
        cmocka_unit_test(test_utf8_cuts),
        cmocka_unit_test(test_utf8_valid_and_cap),
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_xalloc),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_jsonw),
        cmocka_unit_test(test_config_file_and_env),
    };
    testutil_setup("util");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
