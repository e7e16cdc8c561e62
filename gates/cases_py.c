/*
 * cases_py.c - the test cases of `python -m unittest` (pytest's are in
 * cases_text.c with the other text formats).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/cases_int.h"
#include "util/err.h"
#include "util/strbuf.h"

/* ---- python -m unittest ---------------------------------------------------------------
 * -v lines "test_add (tests.test_calc.TestCalc.test_add) ... ok" (Python
 * 3.11; before it "(tests.test_calc.TestCalc)"), "... FAIL", "... ERROR",
 * "... skipped 'why'", "... expected failure" (a skip), "... unexpected
 * success" (a pass); with a docstring the result ends the next line.  The
 * failure report's "FAIL: name (...)" / "ERROR: name (...)" lines name
 * failures without -v.  id = module.Class.method; file = the module's
 * path (its dotted part before a capitalised class). */
static const struct {
    const char *tail;
    enum test_status st;
} ut_results[] = {
    {"ok", TEST_PASS},          {"FAIL", TEST_FAIL},
    {"ERROR", TEST_FAIL},       {"expected failure", TEST_SKIP},
    {"unexpected success", TEST_PASS}, {"skipped", TEST_SKIP},
};

/* "name (dotted)" at p..e: the id into id (n bytes, "" when the line is
 * not one), and the file into file. */
static void ut_name(const char *p, const char *e, char *id, size_t n, char *file, size_t fn)
{
    const char *sp = memchr(p, ' ', (size_t)(e - p)), *open, *close, *cls;
    size_t name_n, dot_n, k;

    id[0] = file[0] = '\0';
    if (!sp || sp == p || sp + 2 >= e || sp[1] != '(' || !(close = memchr(sp, ')', (size_t)(e - sp))))
        return;
    name_n = (size_t)(sp - p);
    open = sp + 2;
    dot_n = (size_t)(close - open);
    if (!dot_n || memchr(p, '(', name_n) || !memchr(open, '.', dot_n))
        return;
    /* 3.11 names the method at the end of the parenthesis already */
    if (dot_n > name_n && open[dot_n - name_n - 1] == '.' &&
        !memcmp(open + dot_n - name_n, p, name_n))
        /* truncation: ok, case ids are cut at CASE_ID_MAX by design (cases_int.h) */
        snprintf(id, n, "%.*s", (int)dot_n, open);
    else
        /* truncation: ok, case ids are cut at CASE_ID_MAX by design (cases_int.h) */
        snprintf(id, n, "%.*s.%.*s", (int)dot_n, open, (int)name_n, p);
    /* the module: the dotted part before the first capitalised one */
    for (cls = open, k = 0; cls < close; cls++)
        if ((cls == open || cls[-1] == '.') && *cls >= 'A' && *cls <= 'Z')
            break;
    k = (size_t)(cls - open);
    if (k > 1 && open[k - 1] == '.') {
        /* a file too long to hold is none: cut, it would name another */
        if ((size_t)snprintf(file, fn, "%.*s.py", (int)(k - 1), open) >= fn)
            file[0] = '\0';
        for (char *f = file; *f && f < file + k - 1; f++)
            if (*f == '.')
                *f = '/';
    }
}

/* The result word after " ... " at p..e, or -1. */
static int ut_result(const char *p, const char *e)
{
    for (size_t w = 0; w < sizeof(ut_results) / sizeof(*ut_results); w++) {
        size_t k = strlen(ut_results[w].tail);
        if ((size_t)(e - p) >= k && !memcmp(p, ut_results[w].tail, k) && (p + k == e || p[k] == ' '))
            return (int)w;
    }
    return -1;
}

int cases_parse_unittest(struct test_cases *out, const char *s, size_t len)
{
    struct case_builder b;
    struct line l;
    size_t pos = 0;
    char id[CASE_ID_MAX + 1], file[CASE_ID_MAX + 1], pending[CASE_ID_MAX + 1] = "",
        pfile[CASE_ID_MAX + 1] = "";
    int rc = 0;

    cb_init(&b, out);
    out->format = "unittest";
    while (!rc && cases_next_line(s, len, &pos, &l)) {
        const char *e = l.p + l.n, *dots = cases_find_in(l.p, l.n, " ... ");
        int w;

        if (cases_starts(l.p, l.n, "FAIL: ") || cases_starts(l.p, l.n, "ERROR: ")) {
            const char *p = l.p + (l.p[0] == 'F' ? 6 : 7);
            ut_name(p, e, id, sizeof(id), file, sizeof(file));
            if (id[0])
                rc = cb_add(&b, id, strlen(id), TEST_FAIL, file[0] ? file : NULL, strlen(file));
            continue;
        }
        ut_name(l.p, dots ? dots : e, id, sizeof(id), file, sizeof(file));
        if (!dots) {
            /* "name (dotted)" then a docstring line with the result */
            if (id[0]) {
                memcpy(pending, id, sizeof(pending));
                memcpy(pfile, file, sizeof(pfile));
            }
            continue;
        }
        if ((w = ut_result(dots + 5, e)) < 0)
            continue;
        if (!id[0] && pending[0]) {
            memcpy(id, pending, sizeof(id));
            memcpy(file, pfile, sizeof(file));
        }
        pending[0] = '\0';
        if (id[0])
            rc = cb_add(&b, id, strlen(id), ut_results[w].st, file[0] ? file : NULL,
                        strlen(file));
    }
    cb_release(&b);
    return rc;
}
