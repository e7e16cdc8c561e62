/*
 * cases_interim.c - INTERIM stand-in for H-gates' per-test-case parsers
 * (branch h-gates), so that the verification flow (lifecycle/verify.c) can
 * be built and tested at test granularity before that branch is merged.
 * When h-gates is merged, DELETE this file: its gates_parse_cases(),
 * gates_compare() and the release functions replace these.
 *
 * Recognised: TAP ("ok N - desc" / "not ok N - desc", "# SKIP"), pytest
 * -rA summary lines ("PASSED id", "FAILED id - msg", "ERROR id") and -v
 * lines ("id PASSED [ 50%]"), ctest ("N/M Test #K: name .... Passed" or
 * "***Failed").  The format with the most cases wins; a repeated id keeps
 * FAIL over PASS.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gates/gates.h"

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        abort();
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void add_case(struct test_cases *c, size_t *cap, const char *id, size_t idn,
                     enum test_status st, const char *file, size_t fn)
{
    while (idn && isspace((unsigned char)id[idn - 1]))
        idn--;
    if (!idn)
        return;
    for (size_t i = 0; i < c->n; i++)
        if (strlen(c->v[i].id) == idn && !strncmp(c->v[i].id, id, idn)) {
            if (st == TEST_FAIL || c->v[i].status == TEST_SKIP)
                c->v[i].status = st;
            return;
        }
    if (c->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        c->v = realloc(c->v, *cap * sizeof(*c->v));
        if (!c->v)
            abort();
    }
    c->v[c->n].id = dupn(id, idn);
    c->v[c->n].status = st;
    c->v[c->n].file = file && fn ? dupn(file, fn) : NULL;
    c->n++;
}

static void parse_tap(struct test_cases *c, size_t *cap, const char *l, size_t n)
{
    enum test_status st;
    size_t i = 0, d;

    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (n - i >= 7 && !strncmp(l + i, "not ok ", 7)) {
        st = TEST_FAIL;
        i += 7;
    } else if (n - i >= 3 && !strncmp(l + i, "ok ", 3)) {
        st = TEST_PASS;
        i += 3;
    } else {
        return;
    }
    d = i;
    while (i < n && isdigit((unsigned char)l[i]))
        i++;
    {
        size_t num_end = i;
        const char *hash;
        size_t end;
        while (i < n && (l[i] == ' ' || l[i] == '-'))
            i++;
        hash = memchr(l + i, '#', n - i);
        end = hash ? (size_t)(hash - l) : n;
        if (hash && n - (size_t)(hash - l) >= 6 &&
            (!strncasecmp(hash, "# skip", 6) || !strncasecmp(hash, "# todo", 6)))
            st = TEST_SKIP;
        if (end > i)
            add_case(c, cap, l + i, end - i, st, NULL, 0);
        else if (num_end > d)
            add_case(c, cap, l + d, num_end - d, st, NULL, 0);
    }
}

static void pytest_add(struct test_cases *c, size_t *cap, const char *id, size_t n,
                       enum test_status st)
{
    const char *sep = NULL;
    for (size_t k = 0; k + 1 < n; k++)
        if (id[k] == ':' && id[k + 1] == ':') {
            sep = id + k;
            break;
        }
    if (!sep)
        return;
    add_case(c, cap, id, n, st, id, (size_t)(sep - id));
}

static void parse_pytest(struct test_cases *c, size_t *cap, const char *l, size_t n)
{
    static const struct {
        const char *w;
        enum test_status st;
    } words[] = {{"PASSED ", TEST_PASS}, {"FAILED ", TEST_FAIL}, {"ERROR ", TEST_FAIL},
                 {"XFAIL ", TEST_SKIP},  {"XPASS ", TEST_PASS}};
    for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        size_t wl = strlen(words[k].w), e;
        if (n > wl && !strncmp(l, words[k].w, wl)) {
            const char *id = l + wl;
            e = strcspn(id, " \n");
            if (e > n - wl)
                e = n - wl;
            pytest_add(c, cap, id, e, words[k].st);
            return;
        }
    }
    /* -v: "tests/test_a.py::test_x PASSED  [ 50%]" */
    {
        size_t e = 0;
        while (e < n && l[e] != ' ')
            e++;
        if (e < n) {
            const char *w = l + e + 1;
            size_t r = n - e - 1;
            if (r >= 6 && !strncmp(w, "PASSED", 6))
                pytest_add(c, cap, l, e, TEST_PASS);
            else if (r >= 6 && !strncmp(w, "FAILED", 6))
                pytest_add(c, cap, l, e, TEST_FAIL);
            else if (r >= 5 && !strncmp(w, "ERROR", 5))
                pytest_add(c, cap, l, e, TEST_FAIL);
            else if (r >= 7 && !strncmp(w, "SKIPPED", 7))
                pytest_add(c, cap, l, e, TEST_SKIP);
        }
    }
}

static void parse_ctest(struct test_cases *c, size_t *cap, const char *l, size_t n)
{
    const char *t = NULL, *name, *dots;
    size_t rest;

    for (size_t k = 0; k + 6 <= n; k++)
        if (!strncmp(l + k, "Test #", 6)) {
            t = l + k;
            break;
        }
    if (!t)
        return;
    name = memchr(t, ':', n - (size_t)(t - l));
    if (!name)
        return;
    name++;
    while (*name == ' ')
        name++;
    rest = n - (size_t)(name - l);
    dots = NULL;
    for (size_t k = 0; k + 1 < rest; k++)
        if (name[k] == ' ' && name[k + 1] == '.') {
            dots = name + k;
            break;
        }
    if (!dots)
        return;
    {
        const char *r = dots;
        size_t left = n - (size_t)(r - l);
        enum test_status st;
        char buf[256];
        size_t m = left < sizeof(buf) - 1 ? left : sizeof(buf) - 1;
        memcpy(buf, r, m);
        buf[m] = '\0';
        if (strstr(buf, "Passed"))
            st = TEST_PASS;
        else if (strstr(buf, "Not Run") || strstr(buf, "Disabled"))
            st = TEST_SKIP;
        else if (strstr(buf, "***"))
            st = TEST_FAIL;
        else
            return;
        add_case(c, cap, name, (size_t)(dots - name), st, NULL, 0);
    }
}

int gates_parse_cases(struct test_cases *out, const char *output, size_t len, const char *root,
                      const char *report_rel, char *note, size_t note_n)
{
    struct test_cases f[3];
    size_t cap[3] = {0, 0, 0}, best = 0;
    static const char *names[3] = {"tap", "pytest", "ctest"};
    const char *p = output, *end = output + len;

    (void)root;
    (void)report_rel;
    if (note && note_n)
        note[0] = '\0';
    memset(out, 0, sizeof(*out));
    memset(f, 0, sizeof(f));
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n && p[n - 1] == '\r')
            n--;
        parse_tap(&f[0], &cap[0], p, n);
        parse_pytest(&f[1], &cap[1], p, n);
        parse_ctest(&f[2], &cap[2], p, n);
        p = nl ? nl + 1 : end;
    }
    for (size_t k = 1; k < 3; k++)
        if (f[k].n > f[best].n)
            best = k;
    for (size_t k = 0; k < 3; k++) {
        if (k == best && f[k].n) {
            *out = f[k];
            out->format = names[k];
        } else {
            test_cases_release(&f[k]);
        }
    }
    return 0;
}

void test_cases_release(struct test_cases *c)
{
    for (size_t i = 0; c && i < c->n; i++) {
        free(c->v[i].id);
        free(c->v[i].file);
    }
    if (c) {
        free(c->v);
        memset(c, 0, sizeof(*c));
    }
}

static const struct test_case *find(const struct test_cases *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].id, id))
            return &c->v[i];
    return NULL;
}

static void push(char ***v, size_t *n, const char *s)
{
    *v = realloc(*v, (*n + 1) * sizeof(**v));
    if (!*v)
        abort();
    (*v)[*n] = strdup(s);
    if (!(*v)[*n])
        abort();
    (*n)++;
}

int gates_compare(struct case_diff *out, const struct test_cases *base,
                  const struct test_cases *now)
{
    memset(out, 0, sizeof(*out));
    out->granularity = "gate";
    if (!base || !now || !base->format || !now->format || !base->n || !now->n ||
        strcmp(base->format, now->format))
        return 0;
    out->granularity = "test";
    for (size_t i = 0; i < now->n; i++) {
        const struct test_case *b = find(base, now->v[i].id);
        enum test_status s = now->v[i].status;
        if (!b) {
            if (s == TEST_FAIL)
                push(&out->new_failing, &out->n_new_failing, now->v[i].id);
        } else if (s == TEST_FAIL && b->status == TEST_PASS) {
            push(&out->introduced, &out->n_introduced, now->v[i].id);
        } else if (s == TEST_FAIL && b->status == TEST_FAIL) {
            push(&out->pre_existing, &out->n_pre_existing, now->v[i].id);
        } else if (s == TEST_PASS && b->status == TEST_FAIL) {
            push(&out->fixed, &out->n_fixed, now->v[i].id);
        }
    }
    for (size_t i = 0; i < base->n; i++)
        if (base->v[i].status == TEST_PASS && !find(now, base->v[i].id))
            push(&out->removed, &out->n_removed, base->v[i].id);
    return 0;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void case_diff_release(struct case_diff *d)
{
    free_list(d->introduced, d->n_introduced);
    free_list(d->pre_existing, d->n_pre_existing);
    free_list(d->fixed, d->n_fixed);
    free_list(d->removed, d->n_removed);
    free_list(d->new_failing, d->n_new_failing);
    memset(d, 0, sizeof(*d));
}
