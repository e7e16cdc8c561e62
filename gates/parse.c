/*
 * parse.c - test counts from the summary lines of common test runners,
 * the last summary found winning: ctest, pytest, unittest, go test, cargo
 * test, TAP.
 * The fallback when no test cases could be parsed (gates/cases.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"

static void reset(struct test_counts *c)
{
    c->passed = c->failed = c->skipped = c->total = -1;
    c->format = NULL;
}

/* The number right before word (e.g. "5 passed"), searching back from the
 * end of line; -1 when absent. */
static int num_before(const char *line, size_t n, const char *word)
{
    size_t wl = strlen(word);

    for (size_t i = n; i-- > 0;) {
        if (i + wl <= n && !strncmp(line + i, word, wl) && i >= 2 && line[i - 1] == ' ' &&
            isdigit((unsigned char)line[i - 2])) {
            size_t k = i - 2;
            while (k > 0 && isdigit((unsigned char)line[k - 1]))
                k--;
            return atoi(line + k);
        }
    }
    return -1;
}

/* ctest: "100% tests passed, 0 tests failed out of 24".  1 when found. */
static int summary_ctest(struct test_counts *c, const char *buf)
{
    int a, b, pct;

    if (sscanf(buf, "%d%% tests passed, %d tests failed out of %d", &pct, &a, &b) != 3 &&
        sscanf(buf, "%d%% tests passed, %d test failed out of %d", &pct, &a, &b) != 3)
        return 0;
    c->failed = a;
    c->total = b;
    c->passed = b - a;
    c->skipped = 0;
    c->format = "ctest";
    return 1;
}

/* cargo: "test result: ok. 3 passed; 0 failed; 1 ignored; ...", added up
 * over several crates.  1 when found. */
static int summary_cargo(struct test_counts *c, const char *buf, size_t m)
{
    int p, f, i;

    if (!strstr(buf, "test result: "))
        return 0;
    p = num_before(buf, m, "passed;");
    f = num_before(buf, m, "failed;");
    i = num_before(buf, m, "ignored;");
    if (p < 0 || f < 0)
        return 0;
    if (c->format && !strcmp(c->format, "cargo")) { /* several crates: add up */
        c->passed += p;
        c->failed += f;
        c->skipped += i > 0 ? i : 0;
    } else {
        c->passed = p;
        c->failed = f;
        c->skipped = i > 0 ? i : 0;
    }
    c->total = c->passed + c->failed + c->skipped;
    c->format = "cargo";
    return 1;
}

/* pytest: "==== 5 passed, 1 failed, 2 skipped in 0.12s ====".  1 when
 * found. */
static int summary_pytest(struct test_counts *c, const char *buf, size_t m)
{
    int p, f, s, e;

    if (!strstr(buf, " in ") || !(strstr(buf, " passed") || strstr(buf, " failed")) ||
        !(buf[0] == '=' || isdigit((unsigned char)buf[0])))
        return 0;
    p = num_before(buf, m, "passed");
    f = num_before(buf, m, "failed");
    s = num_before(buf, m, "skipped");
    e = num_before(buf, m, "error");
    if (p < 0 && f < 0)
        return 0;
    c->passed = p > 0 ? p : 0;
    c->failed = (f > 0 ? f : 0) + (e > 0 ? e : 0);
    c->skipped = s > 0 ? s : 0;
    c->total = c->passed + c->failed + c->skipped;
    c->format = "pytest";
    return 1;
}

/* unittest: "Ran 5 tests in 0.01s", then "OK", "OK (skipped=1)" or
 * "FAILED (failures=1, errors=1, skipped=2)".  1 when found. */
static int summary_unittest(struct test_counts *c, const char *buf)
{
    const char *kv[] = {"failures", "errors", "skipped", "expected failures"};
    const char *p;
    int n, v[4] = {0, 0, 0, 0};

    if (sscanf(buf, "Ran %d test", &n) == 1 && !strncmp(buf, "Ran ", 4)) {
        c->total = c->passed = n;
        c->failed = c->skipped = 0;
        c->format = "unittest";
        return 1;
    }
    if (!c->format || strcmp(c->format, "unittest") || c->total < 0 ||
        (strncmp(buf, "OK (", 4) && strncmp(buf, "FAILED (", 8)))
        return 0;
    /* "key=value" pairs between the parentheses, ", " apart */
    for (p = strchr(buf, '(') + 1; *p && *p != ')';) {
        size_t k = strcspn(p, "=,)");
        for (size_t i = 0; p[k] == '=' && i < 4; i++)
            if (k == strlen(kv[i]) && !strncmp(p, kv[i], k))
                v[i] = atoi(p + k + 1);
        p += strcspn(p, ",)");
        while (*p == ',' || *p == ' ')
            p++;
    }
    c->failed = v[0] + v[1];
    c->skipped = v[2] + v[3];
    c->passed = c->total - c->failed - c->skipped;
    if (c->passed < 0)
        c->passed = 0;
    return 1;
}

static void parse_line(struct test_counts *c, const char *l, size_t n, int *tap_ok, int *tap_not,
                       int *go_ok, int *go_fail, int *go_skip)
{
    char buf[512];
    size_t m = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;

    memcpy(buf, l, m);
    buf[m] = '\0';
    if (summary_ctest(c, buf) || summary_cargo(c, buf, m) || summary_pytest(c, buf, m) ||
        summary_unittest(c, buf))
        return;
    /* go test -v: "--- PASS: TestX", "--- FAIL: TestY", "--- SKIP: TestZ" */
    if (!strncmp(buf, "--- PASS: ", 10) || !strncmp(buf, "    --- PASS: ", 14))
        (*go_ok)++;
    else if (!strncmp(buf, "--- FAIL: ", 10) || !strncmp(buf, "    --- FAIL: ", 14))
        (*go_fail)++;
    else if (!strncmp(buf, "--- SKIP: ", 10) || !strncmp(buf, "    --- SKIP: ", 14))
        (*go_skip)++;
    /* TAP: "ok 1 - x", "not ok 2 - y", "ok 3 # SKIP" */
    if (!strncmp(buf, "ok ", 3) && isdigit((unsigned char)buf[3]))
        (*tap_ok)++;
    else if (!strncmp(buf, "not ok ", 7) && isdigit((unsigned char)buf[7]))
        (*tap_not)++;
}

void gates_parse_counts(struct test_counts *c, const char *output, size_t len)
{
    int tap_ok = 0, tap_not = 0, go_ok = 0, go_fail = 0, go_skip = 0;
    const char *p = output, *end = output + len;

    reset(c);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n && p[n - 1] == '\r')
            n--;
        parse_line(c, p, n, &tap_ok, &tap_not, &go_ok, &go_fail, &go_skip);
        p = nl ? nl + 1 : end;
    }
    if (!c->format && (go_ok || go_fail)) {
        c->passed = go_ok;
        c->failed = go_fail;
        c->skipped = go_skip;
        c->total = go_ok + go_fail + go_skip;
        c->format = "go";
    } else if (!c->format && (tap_ok || tap_not)) {
        c->passed = tap_ok;
        c->failed = tap_not;
        c->skipped = 0;
        c->total = tap_ok + tap_not;
        c->format = "tap";
    }
}
