#include "lifecycle/digest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "store/gate_result.h"
#include "util/err.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define DIGEST_GATES_MAX 16

struct line {
    const char *s;
    size_t n; /* without its newline */
};

/* The lines of text (the last one may lack its newline); *out is freed
 * by the caller with free(). */
static size_t split_lines(const char *text, struct line **out)
{
    size_t n = 0, cap = 64;
    struct line *v = xcalloc(cap, sizeof(*v));
    const char *p = text;

    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (n == cap) {
            cap *= 2;
            v = xrealloc(v, cap * sizeof(*v));
        }
        v[n].s = p;
        v[n].n = len && p[len - 1] == '\r' ? len - 1 : len;
        n++;
        p += len + (nl ? 1 : 0);
    }
    *out = v;
    return n;
}

/* Append one line within budget bytes (its newline counted): whole, or
 * cut at a character boundary with "…" when it alone is longer than the
 * budget.  Returns the bytes used. */
static size_t add_line(strbuf *out, const struct line *l, size_t budget)
{
    size_t cut;

    if (l->n + 1 <= budget) {
        strbuf_add_cut(out, l->s, l->n);
        strbuf_addc_cut(out, '\n');
        return l->n + 1;
    }
    if (budget < 8)
        return 0;
    cut = utf8_cut_back(l->s, budget - 5);
    strbuf_add_cut(out, l->s, cut);
    strbuf_adds_cut(out, "\xe2\x80\xa6\n");
    return cut + 4;
}

/* The name of a pytest section line "==== NAME ====", or NULL. */
static const char *section_name(const struct line *l, size_t *len)
{
    size_t b = 0, e = l->n;

    if (l->n < 7 || l->s[0] != '=' || l->s[1] != '=' || l->s[l->n - 1] != '=')
        return NULL;
    while (b < e && l->s[b] == '=')
        b++;
    while (e > b && l->s[e - 1] == '=')
        e--;
    if (e - b < 3 || l->s[b] != ' ' || l->s[e - 1] != ' ')
        return NULL;
    *len = e - b - 2;
    return l->s + b + 1;
}

static int name_is(const char *name, size_t n, const char *want)
{
    return n == strlen(want) && !memcmp(name, want, n);
}

enum part { PART_DROP, PART_DETAIL, PART_SUMMARY, PART_CLOSING };

/* Each line's part of a pytest output; 0 when the output is not pytest's.
 * Lines before the first section are the end of the failures when they
 * hold a test's header or an assertion line (the front was cut). */
static int pytest_parts(const struct line *v, size_t n, size_t from, enum part *part)
{
    enum part cur = PART_DROP;
    int pytest = 0;
    size_t first = n;

    for (size_t i = from; i < n; i++) {
        size_t len;
        const char *name = section_name(&v[i], &len);
        if (name) {
            if (first == n)
                first = i;
            if (name_is(name, len, "FAILURES") || name_is(name, len, "ERRORS"))
                cur = PART_DETAIL, pytest = 1;
            else if (name_is(name, len, "short test summary info"))
                cur = PART_SUMMARY, pytest = 1;
            else if (name_is(name, len, "warnings summary"))
                cur = PART_DROP, pytest = 1;
            else if (memmem(name, len, " in ", 4) &&
                     (memmem(name, len, "failed", 6) || memmem(name, len, "passed", 6) ||
                      memmem(name, len, "error", 5)))
                cur = PART_CLOSING; /* "1 failed, 2 passed in 0.1s" */
            else
                cur = PART_DROP;
        }
        part[i] = cur;
        if (cur == PART_CLOSING)
            cur = PART_DROP;
    }
    for (size_t i = from; i < first; i++) {
        if ((v[i].n >= 2 && v[i].s[0] == 'E' && v[i].s[1] == ' ') ||
            (v[i].n >= 6 && !memcmp(v[i].s, "_____", 5))) {
            for (size_t k = from; k < first; k++)
                part[k] = PART_DETAIL;
            break;
        }
    }
    return pytest;
}

static int starts(const struct line *l, size_t at, const char *w)
{
    size_t k = strlen(w);

    return l->n >= at + k && !memcmp(l->s + at, w, k);
}

/* Each line's part of a TAP output (node's test runner, tap-producing
 * runners); 0 when it has no "not ok N" nor "TAP version" line.  A failing
 * test's line and its YAML block are the detail, without its stack and
 * node's internal frames; the closing counts ("# tests 4", "# fail 1")
 * the summary; passing tests, subtest headers and timings are left out. */
static int tap_parts(const struct line *v, size_t n, size_t from, enum part *part)
{
    static const char *const counts[] = {"# tests ", "# pass ", "# fail ", "# skipped ",
                                         "# todo ", "# cancelled ", "# suites ", NULL};
    int tap = 0, in_fail = 0, in_stack = 0;
    size_t fail_at = 0, stack_at = 0;

    for (size_t i = from; i < n; i++) {
        size_t at = 0;
        while (at < v[i].n && v[i].s[at] == ' ')
            at++;
        part[i] = PART_DROP;
        if (starts(&v[i], at, "TAP version")) {
            tap = 1;
        } else if (starts(&v[i], at, "not ok ") && v[i].n > at + 7 &&
                   v[i].s[at + 7] >= '0' && v[i].s[at + 7] <= '9') {
            tap = 1, in_fail = 1, in_stack = 0, fail_at = at;
            part[i] = PART_DETAIL;
        } else if (starts(&v[i], at, "ok ") || starts(&v[i], at, "# Subtest")) {
            in_fail = 0;
        } else if (at == 0 && v[i].n && v[i].s[0] == '#') {
            for (int k = 0; counts[k]; k++)
                if (starts(&v[i], 0, counts[k]))
                    part[i] = PART_SUMMARY;
            in_fail = 0;
        } else if (in_fail && at > fail_at) {
            if (starts(&v[i], at, "stack:"))
                in_stack = 1, stack_at = at;
            else if (in_stack && at > stack_at)
                ; /* a frame of the stack */
            else if (memmem(v[i].s, v[i].n, "node:internal", 13) == NULL &&
                     !starts(&v[i], at, "duration_ms:"))
                in_stack = 0, part[i] = PART_DETAIL;
        } else if (v[i].n) {
            in_fail = 0;
        }
    }
    return tap;
}

/* pytest or TAP: the failures from their start, then the summary and the
 * closing line (kept first: they name every failing test); note says
 * what was left out. */
static void digest_parts(strbuf *out, const struct line *v, size_t n, size_t from,
                         const enum part *part, size_t max, const char *note)
{
    size_t used = 0, budget, left = 0, dropped = 0;

    for (size_t i = from; i < n; i++) {
        if (part[i] == PART_SUMMARY || part[i] == PART_CLOSING)
            used += v[i].n + 1;
        else if (part[i] == PART_DROP)
            dropped++;
    }
    if (used > max / 2)
        used = max / 2;
    budget = max - used;
    if (dropped)
        strbuf_addf_cut(out, "[%s left out]\n", note);
    for (size_t i = from; i < n; i++) {
        if (part[i] != PART_DETAIL)
            continue;
        if (v[i].n + 1 <= budget)
            budget -= add_line(out, &v[i], budget);
        else
            left++;
    }
    if (left)
        strbuf_addf_cut(out, "[%zu more lines of the failures left out]\n", left);
    budget = used;
    left = 0;
    for (size_t i = from; i < n; i++) {
        if (part[i] != PART_SUMMARY && part[i] != PART_CLOSING)
            continue;
        if (budget > 0 && (v[i].n + 1 <= budget || part[i] == PART_CLOSING))
            budget -= add_line(out, &v[i], budget);
        else
            left++;
    }
    if (left)
        strbuf_addf_cut(out, "[%zu more lines of the summary left out]\n", left);
}

/* Any other runner: its last lines that fit. */
static void digest_tail(strbuf *out, const struct line *v, size_t n, size_t from, size_t max)
{
    size_t used = 0, start = n;

    while (start > from && used + v[start - 1].n + 1 <= max) {
        start--;
        used += v[start].n + 1;
    }
    if (start == n && n > from) /* one line longer than the budget: its end */
        start = n - 1;
    if (start > from)
        strbuf_addf_cut(out, "[%zu earlier lines left out]\n", start - from);
    for (size_t i = start; i < n; i++)
        add_line(out, &v[i], max);
}

void digest_output(strbuf *out, const char *output, int cut_front, size_t max)
{
    struct line *v = NULL;
    size_t n = split_lines(output ? output : "", &v);
    size_t from = cut_front && n > 1 ? 1 : 0;
    enum part *part = xcalloc(n + 1, sizeof(*part));

    if (pytest_parts(v, n, from, part))
        digest_parts(out, v, n, from, part, max, "pytest's warnings summary and progress lines");
    else if (tap_parts(v, n, from, part))
        digest_parts(out, v, n, from, part, max,
                     "passing tests, stack frames and timings of the TAP output");
    else
        digest_tail(out, v, n, from, max);
    free(part);
    free(v);
}

int digest_is_header(const char *line, size_t n)
{
    if (n < 2 || line[n - 1] != ':')
        return 0;
    if (n > 16 && !memcmp(line, "tests weakened: ", 16))
        return 1;
    return n > 5 && !memcmp(line, "gate ", 5) && memmem(line, n, " failed (exit ", 14) != NULL;
}

/* A header line with nothing after it: its introducing colon becomes a
 * full stop (no line ends in a dangling colon). */
static void add_header_closed(strbuf *out, const char *line, size_t n)
{
    while (n > 0 && (line[n - 1] == ':' || line[n - 1] == ' '))
        n--;
    if (n > 4096)
        n = utf8_cut_back(line, 4096);
    strbuf_add_cut(out, line, n);
    strbuf_adds_cut(out, ".\n");
}

void digest_reason(strbuf *out, const char *reason, size_t max)
{
    struct line *v = NULL;
    size_t n = split_lines(reason ? reason : "", &v);
    int in_gate = 0;

    for (size_t i = 0; i < n;) {
        if (digest_is_header(v[i].s, v[i].n)) {
            in_gate = 1;
            if (i + 1 == n)
                add_header_closed(out, v[i].s, v[i].n);
            else
                add_line(out, &v[i], 4096);
            i++;
            continue;
        }
        if (!in_gate) {
            add_line(out, &v[i], 4096);
            i++;
            continue;
        }
        {
            /* a gate's output: up to the next header */
            size_t k = i;
            strbuf block;
            while (k < n && !digest_is_header(v[k].s, v[k].n))
                k++;
            strbuf_init(&block, 1 << 20);
            strbuf_add_cut(&block, v[i].s, (size_t)(v[k - 1].s + v[k - 1].n - v[i].s));
            /* the reason keeps the last 3000 bytes of each output */
            digest_output(out, strbuf_cstr(&block), block.len >= 2990, max);
            strbuf_release(&block);
            i = k;
        }
    }
    free(v);
}

/* The failing gates of the last attempt that its reason blames, the last
 * row of each name (the restored tree's, after a "tests weakened"). */
struct failed_gates {
    const char *reason;
    size_t n;
    struct {
        char *name, *tail;
        int exit_code;
    } g[DIGEST_GATES_MAX];
};

static int blamed_in(const char *reason, const char *name)
{
    char head[300];

    /* truncation: ok, a heading shown */
    snprintf(head, sizeof(head), "gate %s failed (exit ", name);
    return strstr(reason, head) != NULL;
}

static int add_failed_gate(const char *name, int exit_code, const char *tail, void *arg)
{
    struct failed_gates *fg = arg;
    size_t i;

    if (!blamed_in(fg->reason, name))
        return 0;
    for (i = 0; i < fg->n && strcmp(fg->g[i].name, name) != 0; i++)
        ;
    if (i == DIGEST_GATES_MAX)
        return 0;
    if (i == fg->n) {
        fg->n++;
        fg->g[i].name = xstrdup(name);
    } else {
        free(fg->g[i].tail);
    }
    fg->g[i].tail = xstrdup(tail ? tail : "");
    fg->g[i].exit_code = exit_code;
    return 0;
}

void digest_failure(strbuf *sb, store *st, const char *item_id, const char *cls, const char *reason,
                    size_t max)
{
    struct failed_gates fg = {reason, 0, {{0}}};
    int weakened = !strncmp(reason, "tests weakened: ", 16);
    const char *p = reason;

    if (!cls || strcmp(cls, "gate") != 0 ||
        store_gate_result_failed_last_run_each(st, item_id, add_failed_gate, &fg) != 0 ||
        fg.n == 0) {
        /* no gate output recorded: the reason as it is, digested */
        err_clear();
        for (size_t i = 0; i < fg.n; i++) {
            free(fg.g[i].name);
            free(fg.g[i].tail);
        }
        digest_reason(sb, reason, max);
        return;
    }
    {
        /* the reason's headers; the last one's output follows below,
         * under its own title: its colon is closed */
        const char *last = NULL;
        size_t last_n = 0;
        while (*p) {
            size_t n = strcspn(p, "\n");
            if (digest_is_header(p, n)) {
                if (last)
                    strbuf_addf_cut(sb, "%.*s\n", (int)last_n, last);
                last = p;
                last_n = n;
            }
            p += n + (p[n] ? 1 : 0);
        }
        if (last)
            add_header_closed(sb, last, last_n);
    }
    for (size_t i = 0; i < fg.n; i++) {
        strbuf_addf_cut(sb, "\nOutput of gate %s (exit %d), run on %s:\n", fg.g[i].name,
                        fg.g[i].exit_code,
                        weakened ? "the product-only tree (the original tests re-run against "
                                   "the item's product, its test changes left out)"
                                 : "the item's tree (the worktree as the attempt left it)");
        if (!fg.g[i].tail[0])
            strbuf_adds_cut(sb, "(no output)\n");
        digest_output(sb, fg.g[i].tail, strlen(fg.g[i].tail) + 4 >= GATES_TAIL, max);
        free(fg.g[i].name);
        free(fg.g[i].tail);
    }
}
