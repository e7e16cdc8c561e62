#include "tools/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 3
#define DP_MAX ((size_t)4 << 20) /* cells of the LCS table before giving up on it */

struct line {
    const char *p;
    size_t len; /* without the newline */
};

struct op {
    char kind;   /* ' ', '-', '+' */
    size_t a, b; /* line indexes in a and b at this op */
};

static struct line *split(const char *s, size_t len, size_t *n)
{
    size_t cap = 16, k = 0, pos = 0;
    struct line *v = malloc(cap * sizeof(*v));

    if (!v)
        abort();
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - s) : len;
        if (k == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof(*v));
            if (!v)
                abort();
        }
        v[k].p = s + pos;
        v[k].len = end - pos;
        k++;
        pos = nl ? end + 1 : len;
    }
    *n = k;
    return v;
}

static int eq(const struct line *x, const struct line *y)
{
    return x->len == y->len && !memcmp(x->p, y->p, x->len);
}

static void push(struct op **ops, size_t *n, size_t *cap, char kind, size_t a, size_t b)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *ops = realloc(*ops, *cap * sizeof(**ops));
        if (!*ops)
            abort();
    }
    (*ops)[*n].kind = kind;
    (*ops)[*n].a = a;
    (*ops)[*n].b = b;
    (*n)++;
}

int diff_unified(strbuf *out, const char *name, const char *a, size_t alen, const char *b,
                 size_t blen, size_t *added, size_t *removed)
{
    return diff_unified_at(out, name, a, alen, b, blen, 0, added, removed);
}

int diff_unified_at(strbuf *out, const char *name, const char *a, size_t alen, const char *b,
                    size_t blen, size_t line0, size_t *added, size_t *removed)
{
    size_t na, nb, pre = 0, suf = 0, nops = 0, cap = 0, nadd = 0, nrem = 0;
    struct line *la = split(a, alen, &na), *lb = split(b, blen, &nb);
    struct op *ops = NULL;
    int rc = 0;

    while (pre < na && pre < nb && eq(&la[pre], &lb[pre]))
        pre++;
    while (suf < na - pre && suf < nb - pre && eq(&la[na - 1 - suf], &lb[nb - 1 - suf]))
        suf++;
    for (size_t i = 0; i < pre; i++)
        push(&ops, &nops, &cap, ' ', i, i);
    {
        size_t m = na - pre - suf, n = nb - pre - suf;
        if (m && n && (m + 1) * (n + 1) <= DP_MAX) {
            /* LCS lengths of suffixes, then walk forward */
            uint32_t *t = calloc((m + 1) * (n + 1), sizeof(*t));
            size_t i = 0, j = 0;
            if (!t)
                abort();
            for (size_t x = m; x-- > 0;)
                for (size_t y = n; y-- > 0;)
                    t[x * (n + 1) + y] = eq(&la[pre + x], &lb[pre + y])
                                             ? t[(x + 1) * (n + 1) + y + 1] + 1
                                             : (t[(x + 1) * (n + 1) + y] > t[x * (n + 1) + y + 1]
                                                    ? t[(x + 1) * (n + 1) + y]
                                                    : t[x * (n + 1) + y + 1]);
            while (i < m || j < n) {
                if (i < m && j < n && eq(&la[pre + i], &lb[pre + j])) {
                    push(&ops, &nops, &cap, ' ', pre + i, pre + j);
                    i++;
                    j++;
                } else if (i < m &&
                           (j == n || t[(i + 1) * (n + 1) + j] >= t[i * (n + 1) + j + 1])) {
                    push(&ops, &nops, &cap, '-', pre + i, pre + j);
                    i++;
                } else {
                    push(&ops, &nops, &cap, '+', pre + i, pre + j);
                    j++;
                }
            }
            free(t);
        } else {
            for (size_t i = 0; i < m; i++)
                push(&ops, &nops, &cap, '-', pre + i, pre);
            for (size_t j = 0; j < n; j++)
                push(&ops, &nops, &cap, '+', pre + m, pre + j);
        }
    }
    for (size_t i = 0; i < suf; i++)
        push(&ops, &nops, &cap, ' ', na - suf + i, nb - suf + i);

    for (size_t k = 0; k < nops; k++) {
        if (ops[k].kind == '+')
            nadd++;
        else if (ops[k].kind == '-')
            nrem++;
    }
    if (nadd || nrem)
        rc = strbuf_addf(out, "--- a/%s\n+++ b/%s\n", name, name);
    for (size_t k = 0; k < nops && !rc;) {
        size_t first, last, end, ol = 0, nl = 0, os, ns;
        if (ops[k].kind == ' ') {
            k++;
            continue;
        }
        /* a hunk: from CONTEXT before this change to CONTEXT after the last
         * change that is at most 2*CONTEXT equal lines further */
        first = k > CONTEXT ? k - CONTEXT : 0;
        last = k;
        for (size_t q = k + 1; q < nops; q++) {
            if (ops[q].kind != ' ') {
                if (q - last > 2 * CONTEXT)
                    break;
                last = q;
            }
        }
        end = last + CONTEXT + 1 < nops ? last + CONTEXT + 1 : nops;
        for (size_t q = first; q < end; q++) {
            if (ops[q].kind != '+')
                ol++;
            if (ops[q].kind != '-')
                nl++;
        }
        os = ol ? ops[first].a + 1 : ops[first].a;
        ns = nl ? ops[first].b + 1 : ops[first].b;
        rc = strbuf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", os + line0, ol, ns + line0, nl);
        for (size_t q = first; q < end && !rc; q++) {
            const struct line *l = ops[q].kind == '+' ? &lb[ops[q].b] : &la[ops[q].a];
            if ((rc = strbuf_addc(out, ops[q].kind)) == 0 &&
                (rc = strbuf_add(out, l->p, l->len)) == 0)
                rc = strbuf_addc(out, '\n');
        }
        k = end;
    }
    if (added)
        *added = nadd;
    if (removed)
        *removed = nrem;
    free(ops);
    free(la);
    free(lb);
    return rc;
}
