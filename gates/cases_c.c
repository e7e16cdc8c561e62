/*
 * cases_c.c - the test cases inside C test executables: Unity, cmocka
 * (its standard output, its TAP and subunit outputs) and Check, whether
 * ctest runs the executables or the command runs one itself
 * (docs/verification.md, "Test cases").
 *
 * ctest runs an executable as one test.  Its output reaches the gate's
 * output with -V (every line prefixed "K: ", K the ctest test's number)
 * or with --output-on-failure (a failed test's lines after its result
 * line).  A case inside executable NAME is "NAME::case"; outside ctest
 * it is the plain case name.  An executable with no inner case stays a
 * case of its own, and so does one ctest failed while none of its cases
 * did (a crash after them, a leak checker).  A case that started and
 * never ended (cmocka's "[ RUN      ]" or subunit's "test:" alone) failed.
 * When the runner's own count exceeds the cases named, or ctest showed
 * only the failures, the list is marked incomplete: nothing is called
 * removed from it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/cases_int.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

#define CTEST_TESTS_MAX 100000 /* a higher ctest test number is not followed */

enum { FW_UNITY, FW_CMOCKA, FW_CHECK, FW_SUBUNIT, FW_TAP, FW_N };

/* The format names: the framework, after "ctest+" under ctest;
 * "mixed" when an output holds more than one. */
static const char *const fw_names[2][FW_N + 1] = {
    {"unity", "cmocka", "check", "subunit", "tap", "c-mixed"},
    {"ctest+unity", "ctest+cmocka", "ctest+check", "ctest+subunit", "ctest+tap", "ctest+mixed"},
};

struct c_ctx {          /* one ctest test (index K), or 0: outside ctest */
    char *name;         /* the ctest test's name; NULL unknown */
    int known;          /* its number was announced: "K: " prefixes are its */
    int has_result;     /* ctest printed its result line */
    enum test_status st;
    size_t inner, inner_failed, summary;
    char *running; /* a case started and not ended */
    int in_block;  /* inside a subunit "[ ... ]" details block */
};

struct c_rec {
    size_t k;
    char *name, *file;
    enum test_status st;
};

struct c_state {
    struct c_ctx *ctx;
    size_t nctx;
    struct c_rec *rec;
    size_t nrec, arec;
    unsigned fw;
    int ctest, verbose, dropped;
};

static int starts(const char *p, const char *e, const char *w)
{
    size_t k = strlen(w);
    return (size_t)(e - p) >= k && !memcmp(p, w, k);
}

/* The context of ctest test k (grown on demand); NULL past the cap. */
static struct c_ctx *ctx_at(struct c_state *s, size_t k)
{
    if (k > CTEST_TESTS_MAX)
        return NULL;
    if (k >= s->nctx) {
        size_t n = k + 16;
        s->ctx = xrealloc(s->ctx, n * sizeof(*s->ctx));
        memset(s->ctx + s->nctx, 0, (n - s->nctx) * sizeof(*s->ctx));
        s->nctx = n;
    }
    return &s->ctx[k];
}

static void rec_add(struct c_state *s, size_t k, const char *name, size_t n, enum test_status st,
                   const char *file, size_t fn, unsigned fw)
{
    struct c_rec *r;
    struct c_ctx *c = &s->ctx[k];

    while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
        n--;
    if (!n)
        return;
    if (s->nrec >= (size_t)GATES_CASES_MAX * 2) {
        s->dropped = 1;
        return;
    }
    if (s->nrec == s->arec) {
        s->arec = s->arec ? s->arec * 2 : 32;
        s->rec = xrealloc(s->rec, s->arec * sizeof(*s->rec));
    }
    r = &s->rec[s->nrec];
    r->k = k;
    r->st = st;
    r->name = xstrndup(name, n > CASE_ID_MAX ? CASE_ID_MAX : n);
    r->file = file && fn ? xstrndup(file, fn > CASE_ID_MAX ? CASE_ID_MAX : fn) : NULL;
    s->nrec++;
    s->fw |= 1u << fw;
    c->inner++;
    if (st == TEST_FAIL)
        c->inner_failed++;
}

/* A case that started in c ends (or, at the end of the output, fails). */
static void run_clear(struct c_ctx *c)
{
    free(c->running);
    c->running = NULL;
}

static void run_start(struct c_ctx *c, const char *p, const char *e)
{
    run_clear(c);
    c->running = xstrndup(p, (size_t)(e - p) > CASE_ID_MAX ? CASE_ID_MAX : (size_t)(e - p));
}

/* ---- ctest's own lines ------------------------------------------------------ */

/* A decimal number at p..e followed by stop; its end, or NULL. */
static const char *number(const char *p, const char *e, size_t *out, char stop)
{
    size_t v = 0;
    const char *q = p;

    while (q < e && isdigit((unsigned char)*q) && q - p < 9)
        v = v * 10 + (size_t)(*q++ - '0');
    if (q == p || q == e || *q != stop)
        return NULL;
    *out = v;
    return q;
}

static void set_name(struct c_ctx *c, const char *p, const char *e)
{
    if (!c->name)
        c->name = xstrndup(p, (size_t)(e - p) > CASE_ID_MAX ? CASE_ID_MAX : (size_t)(e - p));
}

/* "Start K: NAME" (NAME known) or "test K" (-V): 1, 0 when the line is
 * neither. */
static int ctest_start_line(struct c_state *s, const char *p, const char *e)
{
    int is_start = p[0] == 'S';
    const char *q, *d;
    struct c_ctx *c;
    size_t num = 0;

    for (q = p + (is_start ? 6 : 5); q < e && *q == ' '; q++)
        ;
    for (d = q; d < e && isdigit((unsigned char)*d) && d - q < 9; d++)
        num = num * 10 + (size_t)(*d - '0');
    if (d == q || (is_start && (e - d < 3 || d[0] != ':' || d[1] != ' ')) || (!is_start && d != e))
        return 0;
    if (!(c = ctx_at(s, num)))
        return 1;
    c->known = 1;
    if (!is_start)
        return 1;
    s->ctest = 1;
    set_name(c, d + 2, e);
    return 1;
}

/* "N/M Test #K: NAME ... Passed": 1 with *k = K, 0 when the line is none. */
static int ctest_result_line(struct c_state *s, const char *p, const char *e, size_t *k)
{
    const char *name, *stat, *q;
    enum test_status st;
    struct c_ctx *c;
    size_t num;

    if (!(name = cases_ctest_name(p, e)) || !(stat = cases_ctest_status(name, e, &st)))
        return 0;
    /* the number before ": name" */
    for (q = name - 2; q > p && isdigit((unsigned char)q[-1]); q--)
        ;
    if (!number(q, e, &num, ':') || !(c = ctx_at(s, num)))
        return 0;
    while (stat > name && (stat[-1] == ' ' || stat[-1] == '.'))
        stat--;
    c->known = c->has_result = 1;
    c->st = st;
    s->ctest = 1;
    *k = num;
    set_name(c, name, stat);
    return 1;
}

/* ctest's own lines: 1 when the line is one (*k the context its next
 * unprefixed lines are in: a failed test's output follows its result
 * line), 0 when not. */
static int ctest_line(struct c_state *s, const char *p, const char *e, size_t *k)
{
    while (p < e && *p == ' ')
        p++;
    if (starts(p, e, "Start ") || starts(p, e, "test ")) {
        int rc = ctest_start_line(s, p, e);
        if (rc == 1)
            *k = 0;
        return rc;
    }
    if (starts(p, e, "The following tests") || strstr(p, "% tests passed, ")) {
        *k = 0;
        return 1;
    }
    return ctest_result_line(s, p, e, k);
}

/* ---- the frameworks' lines ------------------------------------------------- */

/* cmocka (and Google Test): "[ RUN      ] name", "[       OK ] name",
 * "[  FAILED  ] name", "[  SKIPPED ] name", "[==========] N test(s) run.";
 * the recap's "[  FAILED  ] 1 test(s), listed below:" is not a case. */
static int cmocka_line(struct c_state *s, size_t k, const char *p, const char *e)
{
    static const struct {
        const char *tag;
        int st; /* -1: started */
    } tags[] = {{"[ RUN      ] ", -1},
                {"[       OK ] ", TEST_PASS},
                {"[  FAILED  ] ", TEST_FAIL},
                {"[  SKIPPED ] ", TEST_SKIP}};
    struct c_ctx *c = &s->ctx[k];
    const char *q;

    if (starts(p, e, "[==========] ")) {
        size_t n = 0;
        for (q = p + 13; q < e && isdigit((unsigned char)*q); q++)
            n = n * 10 + (size_t)(*q - '0') % 1000000;
        if (q > p + 13 && starts(q, e, " test(s) run."))
            c->summary += n;
        return 1;
    }
    for (size_t t = 0; t < sizeof(tags) / sizeof(*tags); t++) {
        if (!starts(p, e, tags[t].tag))
            continue;
        p += 13;
        for (q = p; q < e && isdigit((unsigned char)*q); q++)
            ;
        if (q > p && starts(q, e, " test"))
            return 1; /* the recap's count */
        /* Google Test's " (0 ms)" */
        if (e - p > 5 && e[-1] == ')' && starts(e - 4, e, "ms)"))
            for (q = e - 4; q > p; q--)
                if (*q == '(' && q[-1] == ' ') {
                    e = q - 1;
                    break;
                }
        if (tags[t].st < 0) {
            run_start(c, p, e);
            return 1;
        }
        run_clear(c);
        rec_add(s, k, p, (size_t)(e - p), (enum test_status)tags[t].st, NULL, 0, FW_CMOCKA);
        return 1;
    }
    return 0;
}

/* Unity's "N Tests M Failures K Ignored", Check's "NN%: Checks: N, ...":
 * the count into the context's summary; 1 when the line is one. */
static int colon_summary(struct c_state *s, size_t k, const char *p, const char *e)
{
    size_t n, nf, ni;
    const char *q;

    if (sscanf(p, "%zu Tests %zu Failures %zu Ignored", &n, &nf, &ni) == 3 ||
        ((q = strstr(p, "%: Checks: ")) && q < e && sscanf(q + 11, "%zu,", &n) == 1)) {
        s->ctx[k].summary += n % 1000000;
        return 1;
    }
    return 0;
}

/* Unity's result word after NAME: at w..e: the status, or -1. */
static int unity_word(const char *w, const char *e)
{
    static const struct {
        const char *word;
        enum test_status st;
    } words[] = {{"PASS", TEST_PASS}, {"FAIL", TEST_FAIL}, {"IGNORE", TEST_SKIP}};

    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(e - w) >= n && !memcmp(w, words[i].word, n) && (w + n == e || w[n] == ':'))
            return (int)words[i].st;
    }
    return -1;
}

/* Unity "FILE:LINE:NAME:PASS", "...:FAIL: msg", "...:IGNORE[: msg]" and
 * Check "FILE:LINE:P:TCASE:TEST:ITER: msg" (P passed, F failed, E error). */
static int colon_line(struct c_state *s, size_t k, const char *p, const char *e)
{
    const char *q, *name = NULL, *ne;
    size_t line;
    int st;

    if (colon_summary(s, k, p, e))
        return 1;
    /* FILE: the text up to ":digits:" */
    for (q = p + 1; q < e; q++)
        if (*q == ':' && (name = number(q + 1, e, &line, ':')) != NULL)
            break;
    if (!name)
        return 0;
    name++;
    if (e - name > 2 && strchr("PFE", *name) && name[1] == ':') {
        /* Check: TCASE:TEST:ITER: */
        const char *tc = name + 2, *tce = memchr(tc, ':', (size_t)(e - tc)), *te;
        if (!tce || !(te = memchr(tce + 1, ':', (size_t)(e - tce - 1))) || te == tce + 1 ||
            !number(te + 1, e, &line, ':'))
            return 0;
        rec_add(s, k, tc, (size_t)(te - tc), *name == 'P' ? TEST_PASS : TEST_FAIL, p,
                (size_t)(q - p), FW_CHECK);
        return 1;
    }
    if (!(ne = memchr(name, ':', (size_t)(e - name))) || ne == name ||
        memchr(name, ' ', (size_t)(ne - name)) || (st = unity_word(ne + 1, e)) < 0)
        return 0;
    rec_add(s, k, name, (size_t)(ne - name), (enum test_status)st, p, (size_t)(q - p), FW_UNITY);
    return 1;
}

/* subunit (cmocka's and Check's): "test: name" then "success: name",
 * "failure: name [", "error: name", "skip: name", "xfail: name"; only a
 * result for the name just announced counts ("error: ..." is common text
 * otherwise).  A details block "[ ... ]" is skipped. */
static int subunit_line(struct c_state *s, size_t k, const char *p, const char *e)
{
    static const struct {
        const char *word;
        enum test_status st;
    } words[] = {{"success: ", TEST_PASS}, {"successful: ", TEST_PASS}, {"failure: ", TEST_FAIL},
                 {"error: ", TEST_FAIL},   {"skip: ", TEST_SKIP},       {"xfail: ", TEST_SKIP}};
    struct c_ctx *c = &s->ctx[k];

    if (c->in_block) {
        if (e - p == 1 && *p == ']')
            c->in_block = 0;
        return 1;
    }
    if (starts(p, e, "test: ")) {
        run_start(c, p + 6, e);
        return 1;
    }
    if (!c->running)
        return 0;
    for (size_t w = 0; w < sizeof(words) / sizeof(*words); w++) {
        const char *name = p + strlen(words[w].word), *ne = e;
        size_t rn = strlen(c->running);
        if (!starts(p, e, words[w].word))
            continue;
        if (ne - name >= 2 && ne[-1] == '[' && ne[-2] == ' ') {
            ne -= 2;
            c->in_block = 1;
        }
        if ((size_t)(ne - name) != rn || memcmp(name, c->running, rn))
            return 1;
        run_clear(c);
        rec_add(s, k, name, rn, words[w].st, NULL, 0, FW_SUBUNIT);
        return 1;
    }
    return 0;
}

/* TAP inside a ctest test (cmocka's TAP output): "ok N - name", "not ok N
 * - name", "not ok N # SKIP name" (cmocka names a skip after the
 * directive), "ok N - name # SKIP why"; "1..N" is the count. */
static int tap_line(struct c_state *s, size_t k, const char *p, const char *e)
{
    int not = 0;
    enum test_status st;
    const char *hash, *q;
    size_t n;

    if (starts(p, e, "1..") && number(p + 3, e + 1, &n, '\0')) {
        s->ctx[k].summary += n % 1000000;
        return 1;
    }
    if (starts(p, e, "not ok "))
        not = 1, p += 7;
    else if (starts(p, e, "ok "))
        p += 3;
    else
        return 0;
    while (p < e && isdigit((unsigned char)*p))
        p++;
    while (p < e && (*p == ' ' || *p == '-'))
        p++;
    st = not ? TEST_FAIL : TEST_PASS;
    hash = memchr(p, '#', (size_t)(e - p));
    if (hash) {
        for (q = hash + 1; q < e && *q == ' '; q++)
            ;
        if (starts(q, e, "SKIP") || starts(q, e, "skip") || starts(q, e, "TODO")) {
            st = TEST_SKIP;
            if (hash == p) { /* cmocka: "# SKIP name" */
                for (p = q + 4; p < e && *p == ' '; p++)
                    ;
                hash = e;
            }
        }
        e = hash;
    }
    rec_add(s, k, p, (size_t)(e - p), st, NULL, 0, FW_TAP);
    return 1;
}

/* ---- assembling ----------------------------------------------------------------- */

/* The line's context: a "K: " prefix of an announced ctest test, else cur. */
static size_t line_ctx(struct c_state *s, const char **p, const char *e, size_t cur)
{
    size_t k;
    const char *q = number(*p, e, &k, ':');

    if (!q || k >= s->nctx || !s->ctx[k].known || q + 1 > e || (q + 1 < e && q[1] != ' '))
        return cur;
    *p = q + 1 < e ? q + 2 : q + 1;
    if (starts(*p, e, "Test command: "))
        s->verbose = 1;
    return k;
}

#define LINE_MAX_READ (CASE_ID_MAX * 4) /* a longer line is no runner's */

static void parse_lines(struct c_state *s, const char *str, size_t len)
{
    size_t pos = 0, cur = 0, k;
    int rc;
    char buf[LINE_MAX_READ + 1];

    ctx_at(s, 0);
    while (pos < len) {
        const char *p = str + pos, *nl = memchr(p, '\n', len - pos), *e;
        size_t n = nl ? (size_t)(nl - p) : len - pos;

        pos += n + (nl ? 1 : 0);
        if (n && p[n - 1] == '\r')
            n--;
        if (n > LINE_MAX_READ || memchr(p, '\0', n))
            continue;
        /* a NUL-terminated copy: sscanf and strstr read up to one */
        memcpy(buf, p, n);
        buf[n] = '\0';
        p = buf;
        e = buf + n;
        if (ctest_line(s, p, e, &cur))
            continue;
        k = line_ctx(s, &p, e, cur);
        rc = subunit_line(s, k, p, e);
        if (!rc)
            rc = cmocka_line(s, k, p, e);
        if (!rc)
            rc = colon_line(s, k, p, e);
        if (!rc && k)
            tap_line(s, k, p, e);
    }
}

/* The id of r into id: "NAME::case" inside a named ctest test (cut at
 * id's cap, as cb_add cuts it). */
static void rec_id(const struct c_state *s, const struct c_rec *r, strbuf *id)
{
    strbuf_reset(id);
    if (r->k && s->ctx[r->k].name)
        strbuf_addf_cut(id, "%s::", s->ctx[r->k].name);
    strbuf_adds_cut(id, r->name);
}

static int assemble(struct c_state *s, struct test_cases *out)
{
    struct case_builder b;
    strbuf id;
    int rc = 0;

    cb_init(&b, out);
    strbuf_init(&id, CASE_ID_MAX * 3);
    /* a case started and never ended failed */
    for (size_t k = 0; k < s->nctx; k++)
        if (s->ctx[k].running) {
            rec_add(s, k, s->ctx[k].running, strlen(s->ctx[k].running), TEST_FAIL, NULL, 0,
                    FW_CMOCKA);
            run_clear(&s->ctx[k]);
        }
    for (size_t i = 0; i < s->nrec && !rc; i++) {
        rec_id(s, &s->rec[i], &id);
        rc = cb_add(&b, strbuf_cstr(&id), id.len, s->rec[i].st, s->rec[i].file,
                    s->rec[i].file ? strlen(s->rec[i].file) : 0);
    }
    /* the ctest tests without inner cases, or failed outside them */
    for (size_t k = 1; k < s->nctx && !rc && s->nrec; k++) {
        struct c_ctx *c = &s->ctx[k];
        if (!c->has_result || !c->name)
            continue;
        if (!c->inner || (c->st == TEST_FAIL && !c->inner_failed))
            rc = cb_add(&b, c->name, strlen(c->name), c->st, NULL, 0);
        /* ctest showed only failures: a passing test's cases are unseen */
        if (!c->inner && c->st == TEST_PASS && !s->verbose)
            out->incomplete = 1;
    }
    for (size_t k = 0; k < s->nctx; k++)
        if (s->ctx[k].summary > s->ctx[k].inner)
            out->incomplete = 1;
    strbuf_release(&id);
    cb_release(&b);
    if (s->dropped)
        out->truncated = 1;
    return rc;
}

int cases_parse_c(struct test_cases *out, const char *s, size_t len)
{
    struct c_state st;
    unsigned fw;
    int rc, one = -1;

    memset(&st, 0, sizeof(st));
    parse_lines(&st, s, len);
    rc = assemble(&st, out);
    fw = st.fw;
    for (int i = 0; i < FW_N; i++)
        if (fw & (1u << i))
            one = one < 0 ? i : FW_N;
    out->format = fw_names[st.ctest][one < 0 ? 1 : one];
    if (!st.nrec) {
        /* no inner case: ctest's own parser (or another) names what ran */
        test_cases_release(out);
        out->format = fw_names[st.ctest][1];
    }
    for (size_t i = 0; i < st.nrec; i++) {
        free(st.rec[i].name);
        free(st.rec[i].file);
    }
    for (size_t k = 0; k < st.nctx; k++) {
        free(st.ctx[k].name);
        free(st.ctx[k].running);
    }
    free(st.rec);
    free(st.ctx);
    return rc;
}
