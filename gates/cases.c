/*
 * cases.c - test cases: building the list, choosing the format a gate's
 * output is in, comparing two runs case by case (docs/verification.md,
 * "Test cases").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/cases_int.h"
#include "gates/gates.h"
#include "util/err.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

static uint64_t hash_id(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void case_index_release(struct case_index *ix)
{
    free(ix->slot);
    ix->slot = NULL;
    ix->n = 0;
}

size_t case_index_find(const struct case_index *ix, const struct test_cases *c, const char *id,
                       size_t len)
{
    if (!ix->n)
        return (size_t)-1;
    for (size_t i = hash_id(id, len) & (ix->n - 1);; i = (i + 1) & (ix->n - 1)) {
        size_t k = ix->slot[i];
        if (!k)
            return (size_t)-1;
        if (!strncmp(c->v[k - 1].id, id, len) && c->v[k - 1].id[len] == '\0')
            return k - 1;
    }
}

static void index_put(struct case_index *ix, const struct test_cases *c, size_t pos)
{
    const char *id = c->v[pos].id;
    size_t i = hash_id(id, strlen(id)) & (ix->n - 1);

    while (ix->slot[i])
        i = (i + 1) & (ix->n - 1);
    ix->slot[i] = pos + 1;
}

/* Make room for want entries at most half full; rehash c's first have. */
static void index_reserve(struct case_index *ix, const struct test_cases *c, size_t have,
                          size_t want)
{
    size_t n = ix->n ? ix->n : 64;

    while (n < want * 2)
        n *= 2;
    if (n == ix->n)
        return;
    free(ix->slot);
    ix->slot = xcalloc(n, sizeof(*ix->slot));
    ix->n = n;
    for (size_t i = 0; i < have; i++)
        index_put(ix, c, i);
}

void case_index_build(struct case_index *ix, const struct test_cases *c)
{
    memset(ix, 0, sizeof(*ix));
    index_reserve(ix, c, c->n, c->n + 1);
}

void cb_init(struct case_builder *b, struct test_cases *c)
{
    memset(b, 0, sizeof(*b));
    b->c = c;
}

void cb_release(struct case_builder *b)
{
    case_index_release(&b->ix);
}

/* A copy of s[0..n) trimmed, cut at max bytes on a UTF-8 boundary, control
 * characters as '?' (the caller frees it); NULL when nothing is left. */
static char *clean_copy(const char *s, size_t n, size_t max)
{
    char *p;

    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n > max)
        n = utf8_cut_back(s, max);
    if (!n)
        return NULL;
    p = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        p[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    p[n] = '\0';
    return p;
}

static int rank(enum test_status s)
{
    return s == TEST_FAIL ? 2 : s == TEST_PASS ? 1 : 0;
}

int cb_add(struct case_builder *b, const char *id, size_t id_len, enum test_status st,
           const char *file, size_t file_len)
{
    struct test_cases *c = b->c;
    struct test_case *tc;
    char *cid;
    size_t at;

    if (!(cid = clean_copy(id, id_len, CASE_ID_MAX)))
        return 0;
    at = case_index_find(&b->ix, c, cid, strlen(cid));
    if (at != (size_t)-1) {
        tc = &c->v[at];
        if (rank(st) > rank(tc->status))
            tc->status = st;
        free(cid);
        return 0;
    }
    if (c->n >= GATES_CASES_MAX) {
        c->truncated = 1;
        free(cid);
        return 0;
    }
    if (c->n == b->alloc) {
        b->alloc = b->alloc ? b->alloc * 2 : 32;
        c->v = xrealloc(c->v, b->alloc * sizeof(*c->v));
    }
    index_reserve(&b->ix, c, c->n, c->n + 1);
    tc = &c->v[c->n];
    tc->id = cid;
    tc->status = st;
    tc->file = file ? clean_copy(file, file_len, CASE_ID_MAX) : NULL;
    index_put(&b->ix, c, c->n);
    c->n++;
    return 0;
}

void test_cases_release(struct test_cases *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].id);
        free(c->v[i].file);
    }
    free(c->v);
    memset(c, 0, sizeof(*c));
}

void gates_counts_from_cases(struct test_counts *out, const struct test_cases *c)
{
    int p = 0, f = 0, s = 0;

    out->passed = out->failed = out->skipped = out->total = -1;
    out->format = NULL;
    if (!c->format)
        return;
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].status == TEST_PASS)
            p++;
        else if (c->v[i].status == TEST_FAIL)
            f++;
        else
            s++;
    }
    s += (int)(c->unnamed_skips > 1000000 ? 1000000 : c->unnamed_skips);
    out->passed = p;
    out->failed = f;
    out->skipped = s;
    out->total = p + f + s;
    out->format = c->format;
}

static void note_set(char *note, size_t note_n, const char *fmt, const char *a, const char *b)
{
    if (note && note_n)
        snprintf(note, note_n, fmt, a, b); /* truncation: ok, a note */
}

/* A copy of in with its ids and files passed through the redactor: the
 * gate's output is redacted before it is parsed, a report file's text
 * cannot be (a replaced value could break its XML), so its cases are. */
static int redact_cases(struct test_cases *out, const struct test_cases *in)
{
    struct case_builder b;
    int rc = 0;

    cb_init(&b, out);
    out->format = in->format;
    out->truncated = in->truncated;
    out->unnamed_skips = in->unnamed_skips;
    for (size_t i = 0; i < in->n && !rc; i++) {
        char *id = redact_str(in->v[i].id, NULL);
        char *file = redact_str(in->v[i].file, NULL); /* NULL stays NULL */
        rc = cb_add(&b, id, strlen(id), in->v[i].status, file, file ? strlen(file) : 0);
        free(id);
        free(file);
    }
    cb_release(&b);
    if (rc)
        test_cases_release(out);
    return rc;
}

const char *gates_format_intern(const char *f)
{
    static const char *const known[] = {
        "junit",       "tap",          "pytest",      "unittest",      "go",
        "ctest",       "cargo",        "node",        "unity",         "cmocka",
        "check",       "subunit",      "c-mixed",     "ctest+unity",   "ctest+cmocka",
        "ctest+check", "ctest+subunit", "ctest+tap",  "ctest+mixed",
    };
    for (size_t i = 0; f && i < sizeof(known) / sizeof(*known); i++)
        if (!strcmp(f, known[i]))
            return known[i];
    return NULL;
}

/* The text formats, in the order that breaks a tie in case counts (the
 * cases inside C test executables before ctest's executables: finer). */
static int (*const text_parsers[])(struct test_cases *, const char *, size_t) = {
    cases_parse_go,     cases_parse_cargo, cases_parse_c, cases_parse_ctest,
    cases_parse_pytest, cases_parse_unittest, cases_parse_node, cases_parse_tap,
};

int gates_parse_cases(struct test_cases *out, const char *output, size_t len, const char *root,
                      const char *report_rel, char *note, size_t note_n)
{
    struct test_cases best, cur;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    memset(&best, 0, sizeof(best));
    if (note && note_n)
        note[0] = '\0';
    /* the report the goal names wins when it holds cases */
    if (report_rel && root) {
        strbuf sb;
        strbuf_init(&sb, GATES_REPORT_MAX + 1);
        rc = gates_report_read(&sb, root, report_rel, GATES_REPORT_MAX);
        if (rc == ERR_NOMEM) {
            strbuf_release(&sb);
            return rc;
        }
        if (rc != 0) {
            note_set(note, note_n, "report %s ignored: %s", report_rel, err_last());
        } else {
            rc = gates_parse_junit(&best, strbuf_cstr(&sb), sb.len);
            if (rc == ERR_NOMEM) {
                strbuf_release(&sb);
                test_cases_release(&best);
                return rc;
            }
            if (rc != 0) {
                note_set(note, note_n, "report %s ignored: %s", report_rel, err_last());
                test_cases_release(&best);
            } else if (best.n == 0) {
                note_set(note, note_n, "report %s holds no test cases%s", report_rel, "");
                test_cases_release(&best);
            }
        }
        strbuf_release(&sb);
        rc = 0;
        if (best.n) {
            rc = redact_cases(out, &best);
            test_cases_release(&best);
            return rc;
        }
    }
    /* else the format of the output with the most cases (ties: go, cargo,
     * C executables' cases, ctest, pytest, unittest, node, tap) */
    for (size_t i = 0; output && i < sizeof(text_parsers) / sizeof(*text_parsers); i++) {
        memset(&cur, 0, sizeof(cur));
        if ((rc = text_parsers[i](&cur, output, len)) != 0) {
            test_cases_release(&cur);
            test_cases_release(&best);
            return rc;
        }
        if (cur.n > best.n || (cur.n && cur.n == best.n && !best.format) ||
            (!cur.n && cur.unnamed_skips > best.unnamed_skips && !best.n)) {
            test_cases_release(&best);
            best = cur;
        } else {
            test_cases_release(&cur);
        }
    }
    if (!best.n && !best.unnamed_skips)
        test_cases_release(&best); /* nothing found: format NULL */
    *out = best;
    return 0;
}

/* ---- comparison ---------------------------------------------------------- */

struct id_list {
    char ***v;
    size_t *n;
    size_t alloc;
};

static void list_add(struct id_list *l, const char *id)
{
    if (*l->n == l->alloc) {
        l->alloc = l->alloc ? l->alloc * 2 : 8;
        *l->v = xrealloc(*l->v, l->alloc * sizeof(**l->v));
    }
    (*l->v)[(*l->n)++] = xstrdup(id);
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void case_diff_release(struct case_diff *d)
{
    if (!d)
        return;
    free_list(d->introduced, d->n_introduced);
    free_list(d->pre_existing, d->n_pre_existing);
    free_list(d->fixed, d->n_fixed);
    free_list(d->removed, d->n_removed);
    free_list(d->removed_failing, d->n_removed_failing);
    free_list(d->new_failing, d->n_new_failing);
    memset(d, 0, sizeof(*d));
    d->granularity = "gate";
}

int gates_compare(struct case_diff *out, const struct test_cases *base,
                  const struct test_cases *now)
{
    struct id_list intro = {&out->introduced, &out->n_introduced, 0};
    struct id_list pre = {&out->pre_existing, &out->n_pre_existing, 0};
    struct id_list fixed = {&out->fixed, &out->n_fixed, 0};
    struct id_list removed = {&out->removed, &out->n_removed, 0};
    struct id_list gone_failing = {&out->removed_failing, &out->n_removed_failing, 0};
    struct id_list newf = {&out->new_failing, &out->n_new_failing, 0};
    struct case_index bix, nix;

    memset(out, 0, sizeof(*out));
    memset(&bix, 0, sizeof(bix));
    memset(&nix, 0, sizeof(nix));
    out->granularity = "gate";
    if (!base || !now || !base->format || !now->format || !base->n || !now->n ||
        strcmp(base->format, now->format))
        return 0;
    out->granularity = "test";
    case_index_build(&bix, base);
    case_index_build(&nix, now);
    for (size_t i = 0; i < now->n; i++) {
        const struct test_case *t = &now->v[i];
        size_t b = case_index_find(&bix, base, t->id, strlen(t->id));
        enum test_status was = b == (size_t)-1 ? TEST_SKIP : base->v[b].status;

        if (t->status == TEST_FAIL) {
            if (b == (size_t)-1 || was == TEST_SKIP)
                list_add(&newf, t->id);
            else if (was == TEST_PASS)
                list_add(&intro, t->id);
            else
                list_add(&pre, t->id);
        } else if (t->status == TEST_PASS && b != (size_t)-1 && was == TEST_FAIL) {
            list_add(&fixed, t->id);
        }
    }
    /* a list cut short cannot say what is absent from it */
    for (size_t i = 0; !now->truncated && !now->incomplete && !base->incomplete && i < base->n;
         i++) {
        const struct test_case *t = &base->v[i];
        if (t->status == TEST_SKIP || case_index_find(&nix, now, t->id, strlen(t->id)) != (size_t)-1)
            continue;
        list_add(t->status == TEST_PASS ? &removed : &gone_failing, t->id);
    }
    case_index_release(&bix);
    case_index_release(&nix);
    return 0;
}
