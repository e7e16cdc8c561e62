/*
 * cases_text.c - test cases from the text test runners print: TAP, node's
 * spec reporter, pytest, go test -json, ctest, cargo test.
 *
 * Each parser reads the whole output line by line and recognises only its
 * own lines, so running all of them over output that mixes formats is
 * safe; gates_parse_cases keeps the one that found the most cases.  Every
 * parser is linear in the output (nesting depth is capped for names).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/cases_int.h"
#include "util/xalloc.h"
#include "util/strbuf.h"

#define NEST_NAME_DEPTH 16 /* levels of "suite > " kept in a nested name */

/* The next line of s[*pos..len) (without "\n" or "\r\n"); 0 at the end. */
int cases_next_line(const char *s, size_t len, size_t *pos, struct line *l)
{
    const char *nl;

    if (*pos >= len)
        return 0;
    l->p = s + *pos;
    nl = memchr(l->p, '\n', len - *pos);
    l->n = nl ? (size_t)(nl - l->p) : len - *pos;
    *pos += l->n + (nl ? 1 : 0);
    if (l->n && l->p[l->n - 1] == '\r')
        l->n--;
    return 1;
}

int cases_starts(const char *p, size_t n, const char *word)
{
    size_t w = strlen(word);
    return n >= w && !memcmp(p, word, w);
}

static size_t indent_of(const struct line *l)
{
    size_t i = 0;
    while (i < l->n && (l->p[i] == ' ' || l->p[i] == '\t'))
        i++;
    return i;
}

const char *cases_find_in(const char *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);

    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (!memcmp(p + i, needle, k))
            return p + i;
    return NULL;
}

/* ---- nested results (TAP subtests, node's spec reporter) -------------------
 * Runners print a parent's result after its children's, the children more
 * indented.  Points are collected; when a point arrives, the points on the
 * stack indented deeper are its direct children.  A leaf is a case named
 * "parent > child"; a parent is a case only when it failed while none of
 * its children did (a failure in its own body or hooks). */
struct point {
    char *name;
    size_t indent;
    enum test_status st;
    size_t parent; /* index + 1; 0 none */
    int has_children, child_failed;
};

struct nest {
    struct point *v;
    size_t n, alloc;
    size_t *stack;
    size_t depth, stack_alloc;
    int dropped; /* points past the cap */
};

static void nest_add(struct nest *t, const char *name, size_t name_n, size_t indent,
                     enum test_status st)
{
    struct point *pt;

    if (t->n >= (size_t)GATES_CASES_MAX * 2) {
        t->dropped = 1;
        return;
    }
    if (t->n == t->alloc) {
        t->alloc = t->alloc ? t->alloc * 2 : 32;
        t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
    }
    if (t->depth == t->stack_alloc) {
        t->stack_alloc = t->stack_alloc ? t->stack_alloc * 2 : 16;
        t->stack = xrealloc(t->stack, t->stack_alloc * sizeof(*t->stack));
    }
    if (name_n > CASE_ID_MAX)
        name_n = CASE_ID_MAX;
    pt = &t->v[t->n];
    memset(pt, 0, sizeof(*pt));
    pt->name = xstrndup(name, name_n);
    pt->indent = indent;
    pt->st = st;
    while (t->depth && t->v[t->stack[t->depth - 1]].indent > indent) {
        struct point *ch = &t->v[t->stack[--t->depth]];
        ch->parent = t->n + 1;
        pt->has_children = 1;
        if (ch->st == TEST_FAIL || ch->child_failed)
            pt->child_failed = 1;
    }
    t->stack[t->depth++] = t->n++;
}

/* Turn the points into cases and free them. */
static int nest_finish(struct nest *t, struct test_cases *out)
{
    struct case_builder b;
    strbuf id;
    int rc = 0;

    cb_init(&b, out);
    strbuf_init(&id, CASE_ID_MAX * (NEST_NAME_DEPTH + 1) * 2);
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct point *pt = &t->v[i];
        size_t chain[NEST_NAME_DEPTH], k = 0;

        if (pt->has_children && !(pt->st == TEST_FAIL && !pt->child_failed))
            continue;
        for (size_t at = i + 1; at && k < NEST_NAME_DEPTH; at = t->v[at - 1].parent)
            chain[k++] = at - 1;
        strbuf_reset(&id);
        while (k--) { /* its cap holds NEST_NAME_DEPTH names: never cut */
            strbuf_adds_cut(&id, t->v[chain[k]].name);
            if (k)
                strbuf_adds_cut(&id, " > ");
        }
        rc = cb_add(&b, strbuf_cstr(&id), id.len, pt->st, NULL, 0);
    }
    strbuf_release(&id);
    cb_release(&b);
    if (t->dropped)
        out->truncated = 1;
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
    free(t->stack);
    memset(t, 0, sizeof(*t));
    return rc;
}

/* ---- TAP -------------------------------------------------------------------
 * "ok N - desc", "not ok N desc # SKIP why", "# TODO" (a TODO test never
 * fails: not ok # TODO is a skip), YAML blocks skipped, subtests indented
 * (TAP 13/14, node's TAP reporter).  id = desc, else the number. */
static int ci_starts(const char *p, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (n < k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)p[i]) != w[i])
            return 0;
    return 1;
}

/* A test point's start: "ok" or "not ok" (then *is_not) followed by a
 * space or the end; *n is left after it.  NULL when the line is none. */
static const char *tap_point(const char *p, size_t *n, int *is_not)
{
    *is_not = 0;
    if (cases_starts(p, *n, "not ok") && (*n == 6 || p[6] == ' ')) {
        *is_not = 1;
        *n -= 6;
        return p + 6;
    }
    if (cases_starts(p, *n, "ok") && (*n == 2 || p[2] == ' ')) {
        *n -= 2;
        return p + 2;
    }
    return NULL;
}

/* After "ok": the test number (into num, at most 20 digits) and the
 * description's start, past an optional " - ". */
static const char *tap_desc(const char *p, const char *e, char *num, size_t num_n)
{
    const char *desc;

    while (p < e && *p == ' ')
        p++;
    desc = p;
    while (p < e && isdigit((unsigned char)*p))
        p++;
    /* truncation: ok, at most 20 digits */
    snprintf(num, num_n, "%.*s", (int)(p - desc > 20 ? 20 : p - desc), desc);
    if (p > desc && p < e && *p != ' ')
        p = desc; /* "ok 1a": no number, all description */
    while (p < e && *p == ' ')
        p++;
    if (p < e && *p == '-' && (p + 1 == e || p[1] == ' '))
        p++;
    while (p < e && *p == ' ')
        p++;
    return p;
}

/* The first unescaped '#' of desc..e followed by SKIP (1) or TODO (2) is
 * a directive: *hash points at it.  0 when there is none. */
static int tap_directive(const char *desc, const char *e, const char **hash)
{
    for (const char *q = desc; q < e; q++) {
        const char *d = q + 1;
        if (*q == '\\' && q + 1 < e) {
            q++;
            continue;
        }
        if (*q != '#')
            continue;
        while (d < e && *d == ' ')
            d++;
        *hash = q;
        if (ci_starts(d, (size_t)(e - d), "skip"))
            return 1;
        if (ci_starts(d, (size_t)(e - d), "todo"))
            return 2;
    }
    *hash = NULL;
    return 0;
}

/* The case id into buf (CASE_ID_MAX + 1 bytes): the description with
 * "\#" and "\\" unescaped, trailing blanks cut; else the test number; else
 * ("ok" alone: its position among its siblings is unknown) the count. */
static size_t tap_id(char *buf, const char *desc, const char *e, const char *num, size_t count)
{
    size_t k = 0;

    for (const char *q = desc; q < e && k < CASE_ID_MAX; q++) {
        if (*q == '\\' && q + 1 < e && (q[1] == '#' || q[1] == '\\'))
            q++;
        buf[k++] = *q;
    }
    while (k && (buf[k - 1] == ' ' || buf[k - 1] == '\t'))
        k--;
    if (!k) {
        k = strlen(num);
        memcpy(buf, num, k);
    }
    if (!k)
        k = (size_t)snprintf(buf, CASE_ID_MAX + 1, "%zu", count);
    return k;
}

int cases_parse_tap(struct test_cases *out, const char *s, size_t len)
{
    struct nest t;
    struct line l;
    size_t pos = 0, yaml_indent = 0;
    int in_yaml = 0, after_point = 0;
    char num[32], buf[CASE_ID_MAX + 1];

    memset(&t, 0, sizeof(t));
    out->format = "tap";
    while (cases_next_line(s, len, &pos, &l)) {
        size_t ind = indent_of(&l), n = l.n - ind;
        const char *p = l.p + ind, *e, *desc, *hash;
        enum test_status st;
        int is_not, directive;

        if (in_yaml) {
            if (n == 3 && !memcmp(p, "...", 3) && ind >= yaml_indent)
                in_yaml = 0;
            continue;
        }
        if (after_point && n == 3 && !memcmp(p, "---", 3)) {
            in_yaml = 1;
            yaml_indent = ind;
            after_point = 0;
            continue;
        }
        after_point = 0;
        if (!(p = tap_point(p, &n, &is_not)))
            continue;
        after_point = 1;
        e = p + n;
        desc = tap_desc(p, e, num, sizeof(num));
        if ((directive = tap_directive(desc, e, &hash)) != 0)
            e = hash;
        st = is_not ? TEST_FAIL : TEST_PASS;
        if (directive == 1 || (directive == 2 && is_not))
            st = TEST_SKIP;
        nest_add(&t, buf, tap_id(buf, desc, e, num, t.n + 1), ind, st);
    }
    return nest_finish(&t, out);
}

/* ---- node --test, spec reporter ---------------------------------------------
 * "✔ name (1.2ms)", "✖ name (3ms)", "﹣ name (0.1ms) # SKIP", suites opened by
 * "▶ name" and closed by their result line, children indented.  "✖ name
 * (..) # reason" is a todo (never a failure).  The "✖ failing tests:"
 * section at the end repeats failures and is not read. */
int cases_parse_node(struct test_cases *out, const char *s, size_t len)
{
    static const char pass[] = "\xe2\x9c\x94 ", fail[] = "\xe2\x9c\x96 ", skip[] = "\xef\xb9\xa3 ";
    struct nest t;
    struct line l;
    size_t pos = 0;

    memset(&t, 0, sizeof(t));
    out->format = "node";
    while (cases_next_line(s, len, &pos, &l)) {
        size_t ind = indent_of(&l), n = l.n - ind;
        const char *p = l.p + ind, *e, *hash;
        enum test_status st;

        if (cases_starts(p, n, pass))
            st = TEST_PASS;
        else if (cases_starts(p, n, fail))
            st = TEST_FAIL;
        else if (cases_starts(p, n, skip))
            st = TEST_SKIP;
        else
            continue;
        p += 4;
        n -= 4;
        e = p + n;
        if (st == TEST_FAIL && ind == 0 && n == 14 && !memcmp(p, "failing tests:", 14))
            break;
        /* " # directive" after the duration */
        hash = cases_find_in(p, n, ") # ");
        if (hash) {
            if (st == TEST_FAIL)
                st = TEST_SKIP; /* a todo */
            e = hash + 1;
        }
        /* the duration: " (1.23ms)" */
        if (e - p >= 5 && e[-1] == ')' && e[-2] == 's' && e[-3] == 'm') {
            const char *q = e - 4;
            while (q > p && (isdigit((unsigned char)*q) || *q == '.'))
                q--;
            if (q > p && *q == '(' && q[-1] == ' ')
                e = q - 1;
        }
        nest_add(&t, p, (size_t)(e - p), ind, st);
    }
    return nest_finish(&t, out);
}

/* ---- pytest ------------------------------------------------------------------
 * -rA summary lines "PASSED tests/a.py::t", "FAILED tests/a.py::t - msg",
 * "ERROR ...", "XFAIL ..." (a skip), "XPASS ..." (a pass), "SKIPPED [2]
 * tests/a.py:4: why" (unnamed: counted only); -v lines "tests/a.py::t
 * PASSED [ 50%]"; xdist's "[gw0] [ 50%] PASSED tests/a.py::t".  id = the
 * node id; file = its part before "::". */
static const struct {
    const char *word;
    enum test_status st;
} py_words[] = {
    {"PASSED", TEST_PASS},  {"FAILED", TEST_FAIL}, {"ERROR", TEST_FAIL},
    {"SKIPPED", TEST_SKIP}, {"XFAIL", TEST_SKIP},  {"XPASS", TEST_PASS},
};

/* The end of a node id starting at p: the first " - " or end outside [...]. */
static const char *py_id_end(const char *p, const char *e)
{
    int depth = 0;

    for (const char *q = p; q < e; q++) {
        if (*q == '[')
            depth++;
        else if (*q == ']' && depth)
            depth--;
        else if (!depth && *q == ' ')
            return q;
    }
    return e;
}

static int py_add(struct case_builder *b, const char *id, size_t n, enum test_status st)
{
    const char *sep = cases_find_in(id, n, "::");

    if (!sep) {
        /* "ERROR tests/test_b.py - ImportError": a file that did not even
         * collect fails as itself */
        if (st != TEST_FAIL || n < 4 || memcmp(id + n - 3, ".py", 3))
            return 0;
        return cb_add(b, id, n, st, id, n);
    }
    return cb_add(b, id, n, st, id, (size_t)(sep - id));
}

#define PY_NWORDS (sizeof(py_words) / sizeof(*py_words))

/* The -rA or xdist form "[gw0] [ 50%] WORD id": the word's index (p is
 * left at it), or PY_NWORDS. */
static size_t py_summary_word(const char **pp, const char *e)
{
    const char *p = *pp;
    size_t w;

    /* xdist: "[gw0] [ 50%] PASSED id" */
    while (p < e && *p == '[') {
        const char *c = memchr(p, ']', (size_t)(e - p));
        if (!c)
            break;
        p = c + 1;
        while (p < e && *p == ' ')
            p++;
    }
    for (w = 0; w < PY_NWORDS; w++) {
        size_t k = strlen(py_words[w].word);
        if ((size_t)(e - p) > k + 1 && !memcmp(p, py_words[w].word, k) && p[k] == ' ')
            break;
    }
    *pp = p;
    return w;
}

/* The -v form "tests/a.py::t PASSED   [ 50%]", "... SKIPPED (why) [ 50%]"
 * of line l: the word's index with *end at the id's end, or PY_NWORDS. */
static size_t py_verbose_word(const struct line *l, const char **end)
{
    const char *e = l->p + l->n, *q;
    size_t w;

    if (!l->n || l->p[0] == ' ' || !cases_find_in(l->p, l->n, "::"))
        return PY_NWORDS;
    *end = q = py_id_end(l->p, e);
    while (q < e && *q == ' ')
        q++;
    for (w = 0; *end < e && w < PY_NWORDS; w++) {
        size_t k = strlen(py_words[w].word);
        if ((size_t)(e - q) >= k && !memcmp(q, py_words[w].word, k) &&
            (q + k == e || q[k] == ' '))
            break;
    }
    return *end < e ? w : PY_NWORDS;
}

int cases_parse_pytest(struct test_cases *out, const char *s, size_t len)
{
    struct case_builder b;
    struct line l;
    size_t pos = 0, summary_skips = 0, named_skips = 0;
    int rc = 0;

    cb_init(&b, out);
    out->format = "pytest";
    while (!rc && cases_next_line(s, len, &pos, &l)) {
        const char *p = l.p, *e = l.p + l.n, *id, *end;
        size_t w = py_summary_word(&p, e);

        if (w < PY_NWORDS) {
            id = p + strlen(py_words[w].word) + 1;
            if (py_words[w].st == TEST_SKIP && *id == '[')
                /* "SKIPPED [3] tests/a.py:4: why" */
                summary_skips += (size_t)strtoul(id + 1, NULL, 10) % 1000000;
            else
                rc = py_add(&b, id, (size_t)(py_id_end(id, e) - id), py_words[w].st);
            continue;
        }
        if ((w = py_verbose_word(&l, &end)) == PY_NWORDS)
            continue;
        if (py_words[w].st == TEST_SKIP && !strcmp(py_words[w].word, "SKIPPED"))
            named_skips++;
        rc = py_add(&b, l.p, (size_t)(end - l.p), py_words[w].st);
    }
    cb_release(&b);
    out->unnamed_skips = summary_skips > named_skips ? summary_skips - named_skips : 0;
    return rc;
}

/* ---- go test -json -------------------------------------------------------------
 * One JSON object a line; Action pass/fail/skip with a Test ends a case
 * (subtests "TestX/sub" are cases of their own); package-level lines are
 * ignored.  A test that started ("run") and never ended (a panic, a
 * timeout) failed.  id = "Package::Test". */
int cases_parse_go(struct test_cases *out, const char *s, size_t len)
{
    struct case_builder b, rb;
    struct test_cases started;
    struct case_index ix;
    struct line l;
    size_t pos = 0;
    int rc = 0;
    strbuf id;

    memset(&started, 0, sizeof(started));
    memset(&ix, 0, sizeof(ix));
    cb_init(&b, out);
    cb_init(&rb, &started);
    strbuf_init(&id, CASE_ID_MAX * 3);
    out->format = "go";
    while (!rc && cases_next_line(s, len, &pos, &l)) {
        const cJSON *act, *pkg, *test;
        enum test_status st;
        cJSON *j;

        if (l.n < 2 || l.p[0] != '{' || l.p[l.n - 1] != '}' || !cases_find_in(l.p, l.n, "\"Test\""))
            continue;
        if (!(j = cJSON_ParseWithLength(l.p, l.n)))
            continue;
        act = cJSON_GetObjectItemCaseSensitive(j, "Action");
        pkg = cJSON_GetObjectItemCaseSensitive(j, "Package");
        test = cJSON_GetObjectItemCaseSensitive(j, "Test");
        if (cJSON_IsString(act) && cJSON_IsString(test) && *test->valuestring) {
            strbuf_reset(&id);
            if (cJSON_IsString(pkg) && *pkg->valuestring)
                strbuf_addf_cut(&id, "%.1024s::", pkg->valuestring);
            strbuf_addf_cut(&id, "%.1024s", test->valuestring); /* cut as cb_add cuts it */
            if (!strcmp(act->valuestring, "run")) {
                rc = cb_add(&rb, id.buf, id.len, TEST_PASS, NULL, 0);
            } else if (!strcmp(act->valuestring, "pass") || !strcmp(act->valuestring, "fail") ||
                       !strcmp(act->valuestring, "skip")) {
                st = act->valuestring[0] == 'p'   ? TEST_PASS
                     : act->valuestring[0] == 'f' ? TEST_FAIL
                                                  : TEST_SKIP;
                rc = cb_add(&b, id.buf, id.len, st, NULL, 0);
            }
        }
        cJSON_Delete(j);
    }
    /* started, never ended: failed */
    if (!rc && started.n) {
        case_index_build(&ix, out);
        for (size_t i = 0; !rc && i < started.n; i++)
            if (case_index_find(&ix, out, started.v[i].id, strlen(started.v[i].id)) == (size_t)-1)
                rc = cb_add(&b, started.v[i].id, strlen(started.v[i].id), TEST_FAIL, NULL, 0);
    }
    case_index_release(&ix);
    strbuf_release(&id);
    cb_release(&rb);
    cb_release(&b);
    test_cases_release(&started);
    return rc;
}

/* ---- ctest ----------------------------------------------------------------------
 * " 2/11 Test  #2: name .....***Failed    0.00 sec": Passed; ***Failed,
 * ***Timeout, ***Exception, ***Not Run are failures; ***Skipped and
 * "***Not Run (Disabled)" are skips.  id = the test's name. */
/* The name's start in a ctest result line " 2/11 Test  #2: name ...", or
 * NULL when the line is none. */
const char *cases_ctest_name(const char *p, const char *e)
{
    while (p < e && *p == ' ')
        p++;
    if (p == e || !isdigit((unsigned char)*p))
        return NULL;
    while (p < e && isdigit((unsigned char)*p))
        p++;
    if (p == e || *p++ != '/')
        return NULL;
    while (p < e && isdigit((unsigned char)*p))
        p++;
    while (p < e && *p == ' ')
        p++;
    if (!cases_starts(p, (size_t)(e - p), "Test"))
        return NULL;
    p += 4;
    while (p < e && *p == ' ')
        p++;
    if (p == e || *p++ != '#')
        return NULL;
    while (p < e && isdigit((unsigned char)*p))
        p++;
    if (e - p < 2 || p[0] != ':' || p[1] != ' ')
        return NULL;
    return p + 2;
}

/* Where the status of the line starts after name ("***Failed", or the last
 * " Passed"), with *st; NULL when there is none. */
const char *cases_ctest_status(const char *name, const char *e, enum test_status *st)
{
    const char *stat = cases_find_in(name, (size_t)(e - name), "***");

    if (stat) {
        const char *w = stat + 3;
        size_t wn = (size_t)(e - w);
        *st = cases_starts(w, wn, "Skipped") || cases_starts(w, wn, "Not Run (Disabled)") ? TEST_SKIP
                                                                                : TEST_FAIL;
        return stat;
    }
    for (const char *q = cases_find_in(name, (size_t)(e - name), " Passed"); q;
         q = cases_find_in(q + 1, (size_t)(e - q - 1), " Passed"))
        stat = q;
    *st = TEST_PASS;
    return stat;
}

int cases_parse_ctest(struct test_cases *out, const char *s, size_t len)
{
    struct case_builder b;
    struct line l;
    size_t pos = 0;
    int rc = 0;

    cb_init(&b, out);
    out->format = "ctest";
    while (!rc && cases_next_line(s, len, &pos, &l)) {
        const char *e = l.p + l.n, *name, *stat, *ne;
        enum test_status st;

        if (!(name = cases_ctest_name(l.p, e)) || !(stat = cases_ctest_status(name, e, &st)))
            continue;
        ne = stat;
        while (ne > name && (ne[-1] == ' ' || ne[-1] == '.'))
            ne--;
        rc = cb_add(&b, name, (size_t)(ne - name), st, NULL, 0);
    }
    cb_release(&b);
    return rc;
}

/* ---- cargo test -------------------------------------------------------------------
 * "test tests::it_works ... ok", "... FAILED", "... ignored[, why]"; the
 * file is the target's ("Running unittests src/lib.rs (...)").  id = the
 * test's path (a doctest's is "src/lib.rs - add (line 2)"). */
int cases_parse_cargo(struct test_cases *out, const char *s, size_t len)
{
    struct case_builder b;
    struct line l;
    size_t pos = 0;
    const char *file = NULL;
    size_t file_n = 0;
    int rc = 0;

    cb_init(&b, out);
    out->format = "cargo";
    while (!rc && cases_next_line(s, len, &pos, &l)) {
        size_t ind = indent_of(&l), n = l.n - ind;
        const char *p = l.p + ind, *e = p + n, *dots, *r;
        enum test_status st;

        if (cases_starts(p, n, "Running ")) {
            /* "Running unittests src/lib.rs (target/...)", "Running tests/it.rs (...)" */
            const char *f = p + 8, *paren;
            if (cases_starts(f, (size_t)(e - f), "unittests "))
                f += 10;
            /* looked for after "unittests ": "Running unittests (x" has
             * its " (" before the name */
            paren = cases_find_in(f, (size_t)(e - f), " (");
            file = f;
            file_n = paren ? (size_t)(paren - f) : (size_t)(e - f);
            continue;
        }
        if (cases_starts(p, n, "Doc-tests ")) {
            file = NULL;
            continue;
        }
        if (ind || !cases_starts(p, n, "test ") || !(dots = cases_find_in(p + 5, n - 5, " ... ")))
            continue;
        r = dots + 5;
        if ((size_t)(e - r) == 2 && !memcmp(r, "ok", 2))
            st = TEST_PASS;
        else if ((size_t)(e - r) == 6 && !memcmp(r, "FAILED", 6))
            st = TEST_FAIL;
        else if (cases_starts(r, (size_t)(e - r), "ignored"))
            st = TEST_SKIP;
        else
            continue;
        rc = cb_add(&b, p + 5, (size_t)(dots - p - 5), st, file, file_n);
    }
    cb_release(&b);
    return rc;
}
