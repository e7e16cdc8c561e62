/* edit: replace text in a file; exact first, then whitespace/quote-normalised. */
#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tools/diff.h"
#include "tools/internal.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/redact.h"
#include "util/xalloc.h"

#define BOM "\xEF\xBB\xBF"

/* CRLF pairs to LF, into out. */
static int to_lf(strbuf *out, const char *s, size_t len)
{
    size_t from = 0;
    int rc;

    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] == '\r' && s[i + 1] == '\n') {
            if ((rc = strbuf_add(out, s + from, i - from)) != 0)
                return rc;
            from = i + 1;
        }
    }
    return strbuf_add(out, s + from, len - from);
}

/* The normalised text, or (map mode) the original spans of some of its
 * bytes: for the ascending normalised indexes q[], ans[] receives where
 * the byte came from (even k: its first original byte) or ends (odd k:
 * past its last).  Two passes of the normaliser instead of two size_t per
 * byte of the file: edit's memory stays near the file's size. */
struct norm {
    strbuf text;
    int map;
    size_t idx; /* normalised bytes emitted */
    const size_t *q;
    size_t nq, qi;
    size_t *ans;
};

static int norm_emit(struct norm *n, const char *s, size_t k, size_t from, size_t to)
{
    if (!n->map) {
        n->idx += k;
        return strbuf_add(&n->text, s, k);
    }
    for (size_t i = 0; i < k; i++) {
        while (n->qi < n->nq && n->q[n->qi] == n->idx) {
            n->ans[n->qi] = n->qi % 2 ? to : from;
            n->qi++;
        }
        n->idx++;
    }
    return 0;
}

/* Map a typographic character at s (UTF-8) to ASCII: *rep and its length
 * into *rlen; returns the length of the source character, or 0 when it
 * is not one.  *is_space for the Unicode spaces. */
static size_t typographic(const unsigned char *s, size_t len, const char **rep, int *is_space)
{
    *is_space = 0;
    if (len >= 2 && s[0] == 0xC2 && s[1] == 0xA0) {
        *is_space = 1;
        return 2;
    }
    if (len >= 3 && s[0] == 0xE2 && s[1] == 0x80) {
        unsigned c = s[2];
        if (c >= 0x98 && c <= 0x9B) {
            *rep = "'";
            return 3;
        }
        if (c >= 0x9C && c <= 0x9F) {
            *rep = "\"";
            return 3;
        }
        if (c >= 0x90 && c <= 0x95) {
            *rep = "-";
            return 3;
        }
        if (c == 0xA6) {
            *rep = "...";
            return 3;
        }
        if (c <= 0x8A || c == 0xAF) {
            *is_space = 1;
            return 3;
        }
    }
    if (len >= 3 && s[0] == 0xE2 && s[1] == 0x88 && s[2] == 0x92) {
        *rep = "-";
        return 3;
    }
    if (len >= 3 && ((s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) ||
                     (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80))) {
        *is_space = 1;
        return 3;
    }
    return 0;
}

/* Normalise: typographic quotes/dashes to ASCII, runs of blanks (spaces,
 * tabs, Unicode spaces) to one space, blanks before a newline or the end
 * dropped. */
static int normalise(struct norm *n, const char *s, size_t len)
{
    size_t i = 0, ws_from = 0, ws_to = 0;
    int pending = 0, rc = 0;

    while (i < len && !rc) {
        const char *rep = NULL;
        int is_space = 0;
        size_t k = typographic((const unsigned char *)s + i, len - i, &rep, &is_space);
        if (!k && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f')) {
            k = 1;
            is_space = 1;
        }
        if (is_space) {
            if (!pending)
                ws_from = i;
            pending = 1;
            ws_to = i + k;
            i += k;
            continue;
        }
        if (s[i] == '\n') {
            pending = 0;
            rc = norm_emit(n, "\n", 1, i, i + 1);
            i++;
            continue;
        }
        if (pending) {
            pending = 0;
            if ((rc = norm_emit(n, " ", 1, ws_from, ws_to)) != 0)
                break;
        }
        if (k) {
            rc = norm_emit(n, rep, strlen(rep), i, i + k);
            i += k;
        } else {
            rc = norm_emit(n, s + i, 1, i, i + 1);
            i++;
        }
    }
    return rc;
}

static void norm_free(struct norm *n)
{
    strbuf_release(&n->text);
}

/* Non-overlapping occurrences of needle in hay; their starts into *pos
 * (malloc'd; the caller frees). */
static size_t find_all(const char *hay, size_t hl, const char *needle, size_t nl, size_t **pos)
{
    size_t n = 0, cap = 0, at = 0;

    *pos = NULL;
    while (at + nl <= hl) {
        const char *p = memmem(hay + at, hl - at, needle, nl);
        if (!p)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            *pos = xrealloc(*pos, cap * sizeof(size_t));
        }
        (*pos)[n++] = (size_t)(p - hay);
        at = (size_t)(p - hay) + nl;
    }
    return n;
}

/* The new file, streamed into the temporary file: the BOM, then the text
 * with each span replaced by the new text, LF turned back into CRLF when
 * the file had CRLF. */
struct fill {
    int bom, crlf;
    const char *text;
    size_t len;
    const size_t *s, *e; /* the replaced spans of text */
    size_t nsel;
    const char *repl;
    size_t rlen;
};

static int emit(int fd, const char *p, size_t n, int crlf, const char *label)
{
    char buf[65536];
    size_t k = 0;
    int rc;

    if (!crlf)
        return fs_write_all(fd, p, n, label);
    for (size_t i = 0; i < n; i++) {
        if (k + 2 > sizeof(buf)) {
            if ((rc = fs_write_all(fd, buf, k, label)) != 0)
                return rc;
            k = 0;
        }
        if (p[i] == '\n')
            buf[k++] = '\r';
        buf[k++] = p[i];
    }
    return fs_write_all(fd, buf, k, label);
}

static int fill(void *arg, int fd, const char *label)
{
    const struct fill *f = arg;
    size_t at = 0;
    int rc;

    if (f->bom && (rc = fs_write_all(fd, BOM, 3, label)) != 0)
        return rc;
    for (size_t i = 0; i < f->nsel; i++) {
        if ((rc = emit(fd, f->text + at, f->s[i] - at, f->crlf, label)) != 0 ||
            (rc = emit(fd, f->repl, f->rlen, f->crlf, label)) != 0)
            return rc;
        at = f->e[i];
    }
    return emit(fd, f->text + at, f->len - at, f->crlf, label);
}

static size_t count_nl(const char *p, size_t n)
{
    size_t k = 0;

    for (const char *q = p; (q = memchr(q, '\n', (size_t)(p + n - q))) != NULL; q++)
        k++;
    return k;
}

#define DIFF_WINDOW_MAX ((size_t)1 << 20) /* bytes of the old text around the change */

/* The unified diff of the changed region only (from CONTEXT lines before
 * the first span to CONTEXT lines after the last), so that its cost does
 * not grow with the file; a region over DIFF_WINDOW_MAX is not diffed. */
static int diff_window(strbuf *out, const char *name, const struct fill *f, size_t *added,
                       size_t *removed)
{
    const char *t = f->text;
    size_t ls = f->s[0], le = f->e[f->nsel - 1], line0;
    strbuf b = STRBUF_INIT;
    struct diff_stat stat;
    int rc;

    for (int k = 0; k <= 3 && ls > 0; k++) { /* back to the start of the line, then 3 more */
        while (ls > 0 && t[ls - 1] != '\n')
            ls--;
        if (k < 3 && ls > 0)
            ls--;
    }
    for (int k = 0; k <= 3 && le < f->len; k++) { /* to the end of the line, then 3 more */
        const char *nl = memchr(t + le, '\n', f->len - le);
        le = nl ? (size_t)(nl - t) + 1 : f->len;
    }
    if (le - ls > DIFF_WINDOW_MAX)
        return ERR_TOOBIG;
    line0 = count_nl(t, ls);
    strbuf_init(&b, (le - ls) + f->nsel * f->rlen + 1);
    rc = 0;
    for (size_t i = 0, at = ls; i <= f->nsel && !rc; i++) {
        /* the text before span i (or the rest), then the replacement */
        size_t end = i < f->nsel ? f->s[i] : le;
        if ((rc = strbuf_add(&b, t + at, end - at)) == 0 && i < f->nsel)
            rc = strbuf_add(&b, f->repl, f->rlen);
        if (i < f->nsel)
            at = f->e[i];
    }
    if (!rc) {
        rc = diff_unified_at(out, name, t + ls, le - ls, strbuf_cstr(&b), b.len, line0, &stat);
        if (added)
            *added = stat.added;
        if (removed)
            *removed = stat.removed;
    }
    strbuf_release(&b);
    return rc;
}

/* One edit: the file's text and what replaces what in it. */
struct edit {
    char rel[PATH_MAX], target[PATH_MAX];
    struct stat st;
    strbuf raw, lf;      /* the file; with LF when it had CRLF */
    strbuf old_t, new_t; /* the arguments, with LF */
    struct norm nc, no;
    struct fill f;
    size_t *pos; /* where old_text was found (malloc'd) */
    size_t count;
    int normalised;
};

static void edit_release(struct edit *e)
{
    free(e->pos);
    free((void *)e->f.s);
    free((void *)e->f.e);
    norm_free(&e->nc);
    norm_free(&e->no);
    strbuf_release(&e->raw);
    strbuf_release(&e->lf);
    strbuf_release(&e->old_t);
    strbuf_release(&e->new_t);
}

#define EDIT_STOP 1 /* res is filled: the tool is done */

/* Open the file at path and check what it is: res fails (EDIT_STOP
 * returned) for a bad path, a folder, a special file, an empty old_text
 * or a file over cap; a negative error code when the file cannot be
 * opened. */
static int edit_open(struct tool_ctx *ctx, struct tool_result *res, struct edit *e,
                     const char *path, const char *old_arg, size_t cap, int *fd)
{
    char sz[32], sz2[32];

    int rc;

    if (tool_path(ctx, res, path, e->rel, sizeof(e->rel)) != 0)
        return EDIT_STOP;
    if ((rc = path_follow(e->target, sizeof(e->target), ctx->root_fd, e->rel)) != 0 ||
        (rc = path_open(fd, ctx->root_fd, e->target, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0)) != 0)
        return rc;
    if (fstat(*fd, &e->st) != 0)
        return err_set(ERR_IO, "%s: %s", e->rel, strerror(errno));
    if (S_ISDIR(e->st.st_mode))
        tool_fail(res, TOOL_VALIDATION, "%s: is a folder", e->rel);
    else if (!S_ISREG(e->st.st_mode))
        tool_fail_special(res, e->rel, e->st.st_mode);
    else if (!*old_arg)
        tool_fail(res, TOOL_VALIDATION,
                  "edit: old_text: must not be empty (use write to create "
                  "a file)");
    else if ((uint64_t)e->st.st_size > cap)
        tool_fail(res, TOOL_VALIDATION,
                  "%s: %s is larger than tools.read_max_mb (%s): edit it with bash (sed -i)",
                  e->rel, format_size(sz, sizeof(sz), (size_t)e->st.st_size),
                  format_size(sz2, sizeof(sz2), cap));
    else
        return 0;
    return EDIT_STOP;
}

/* Read the file at fd into e->f.text (without a BOM, CRLF to LF). */
static int edit_load(struct edit *e, int fd, size_t cap)
{
    const char *body;
    size_t body_len;
    int rc;

    if ((rc = tool_read_fd(&e->raw, fd, cap, e->rel)) != 0)
        return rc;
    body = strbuf_cstr(&e->raw);
    body_len = e->raw.len;
    if (body_len >= 3 && !memcmp(body, BOM, 3)) {
        e->f.bom = 1;
        body += 3;
        body_len -= 3;
    }
    e->f.crlf = memmem(body, body_len, "\r\n", 2) != NULL;
    e->f.text = body;
    e->f.len = body_len;
    if (e->f.crlf) { /* only then a second copy, with LF */
        strbuf_init(&e->lf, body_len + 1);
        if ((rc = to_lf(&e->lf, body, body_len)) != 0)
            return rc;
        strbuf_release(&e->raw);
        e->f.text = strbuf_cstr(&e->lf);
        e->f.len = e->lf.len;
    }
    return 0;
}

/* Find old_text: exactly, else normalised (e->normalised); e->pos and
 * e->count receive the matches. */
static int edit_find(struct edit *e)
{
    int rc;

    e->count = find_all(e->f.text, e->f.len, e->old_t.buf, e->old_t.len, &e->pos);
    if (e->count)
        return 0;
    /* the normalised match; its positions are mapped back to the
     * original by a second pass */
    strbuf_init(&e->nc.text, e->f.len + 1);
    strbuf_init(&e->no.text, e->old_t.len + 1);
    if ((rc = normalise(&e->nc, e->f.text, e->f.len)) != 0 ||
        (rc = normalise(&e->no, e->old_t.buf, e->old_t.len)) != 0)
        return rc;
    if (e->no.text.len)
        e->count = find_all(strbuf_cstr(&e->nc.text), e->nc.text.len, e->no.text.buf,
                            e->no.text.len, &e->pos);
    e->normalised = e->count > 0;
    strbuf_release(&e->nc.text);
    return 0;
}

/* The spans of the first nsel matches in the original text, into e->f. */
static void edit_spans(struct edit *e, size_t nsel)
{
    size_t *spans = xmalloc(2 * nsel * sizeof(*spans));
    size_t *s, *en;
    int rc;

    for (size_t i = 0; i < nsel; i++) {
        spans[2 * i] = e->pos[i];
        spans[2 * i + 1] = e->normalised ? e->pos[i] + e->no.text.len - 1 : e->pos[i] + e->old_t.len;
    }
    if (e->normalised) {
        size_t *q = xmalloc(2 * nsel * sizeof(*q));
        memcpy(q, spans, 2 * nsel * sizeof(*q));
        e->nc.map = 1;
        e->nc.idx = 0;
        e->nc.q = q;
        e->nc.nq = 2 * nsel;
        e->nc.ans = spans;
        rc = normalise(&e->nc, e->f.text, e->f.len);
        assert(rc == 0); /* the map pass appends nothing */
        (void)rc;
        free(q);
    }
    /* the spans: starts at even, ends at odd indexes */
    s = xmalloc(nsel * sizeof(*s));
    en = xmalloc(nsel * sizeof(*en));
    for (size_t i = 0; i < nsel; i++) {
        s[i] = spans[2 * i];
        en[i] = spans[2 * i + 1];
    }
    free(spans);
    e->f.s = s;
    e->f.e = en;
    e->f.nsel = nsel;
    e->f.repl = strbuf_cstr(&e->new_t);
    e->f.rlen = e->new_t.len;
}

/* The new file's size, before anything is written: never cut to fit. */
static uint64_t edit_new_size(const struct fill *f)
{
    uint64_t new_size = (uint64_t)f->len + (uint64_t)f->nsel * f->rlen + (f->bom ? 3 : 0);
    uint64_t new_nl = count_nl(f->text, f->len) + (uint64_t)f->nsel * count_nl(f->repl, f->rlen);

    for (size_t i = 0; i < f->nsel; i++) {
        new_size -= f->e[i] - f->s[i];
        new_nl -= count_nl(f->text + f->s[i], f->e[i] - f->s[i]);
    }
    if (f->crlf)
        new_size += new_nl;
    return new_size;
}

/* The diff (or the notice that there is none) and the meta of a done
 * edit, into res. */
static int edit_report(struct tool_result *res, const struct edit *e)
{
    strbuf diff = STRBUF_INIT;
    size_t added = 0, removed = 0, nsel = e->f.nsel;
    char sz[32];
    int diffed, rc;

    diffed = diff_window(&diff, e->target, &e->f, &added, &removed) == 0;
    err_clear();
    rc = strbuf_addf(&res->output, "Edited %s: replaced %zu occurrence%s%s.\n\n", e->rel, nsel,
                     nsel == 1 ? "" : "s",
                     e->normalised ? " (matched after normalising whitespace and quotes)" : "");
    if (!diffed) {
        if (!rc)
            rc = strbuf_addf(&res->output,
                             "[The change spans more than %s of the file: no diff is "
                             "shown. Use read to see the result.]",
                             format_size(sz, sizeof(sz), DIFF_WINDOW_MAX));
    } else {
        struct trunc t;
        truncate_head(&t, strbuf_cstr(&diff), diff.len, tool_max_lines(), tool_max_bytes());
        if (!rc)
            rc = strbuf_add(&res->output, strbuf_cstr(&diff), t.len);
        if (t.truncated) {
            res->truncated = 1;
            res->truncated_by = t.by;
            if (!rc)
                rc = strbuf_addf(&res->output,
                                 "\n[Diff cut at %zu of %zu lines (%s limit). Use read to "
                                 "see the file.]",
                                 t.lines, t.total_lines,
                                 !strcmp(t.by, "bytes")
                                     ? format_size(sz, sizeof(sz), tool_max_bytes())
                                     : "line");
        }
        res->total_lines = (int64_t)t.total_lines;
        res->total_bytes = (int64_t)t.total_bytes;
    }
    cJSON_AddStringToObject(tool_meta(res), "path", e->target);
    cJSON_AddNumberToObject(tool_meta(res), "replacements", (double)nsel);
    cJSON_AddStringToObject(tool_meta(res), "match", e->normalised ? "normalised" : "exact");
    cJSON_AddBoolToObject(tool_meta(res), "crlf", e->f.crlf);
    cJSON_AddBoolToObject(tool_meta(res), "bom", e->f.bom);
    if (diffed) {
        cJSON_AddNumberToObject(tool_meta(res), "lines_added", (double)added);
        cJSON_AddNumberToObject(tool_meta(res), "lines_removed", (double)removed);
    }
    strbuf_release(&diff);
    return rc;
}

/* How many times the redaction mask occurs in s. */
static size_t marks(const char *s)
{
    size_t n = 0;

    while ((s = strstr(s, REDACTED)) != NULL) {
        n++;
        s += sizeof(REDACTED) - 1;
    }
    return n;
}

/* Refuse an edit that cannot be made: res fails (1 returned) when
 * old_text and new_text are equal, old_text is not found or found more
 * than once without all. */
static int edit_refused(struct tool_result *res, const struct edit *e, int all)
{
    if (e->old_t.len == e->new_t.len &&
        !memcmp(strbuf_cstr(&e->old_t), strbuf_cstr(&e->new_t), e->old_t.len))
        return tool_fail(res, TOOL_VALIDATION,
                         "edit: old_text and new_text are the same: nothing to "
                         "change") == 0;
    if (e->count == 0 && strstr(strbuf_cstr(&e->old_t), REDACTED))
        return tool_fail(res, TOOL_NOT_FOUND,
                         "%s: old_text was not found: it holds " REDACTED ", the mask goald "
                         "puts over a secret in tool output; the file has the real text there. "
                         "Use an old_text that stops before the masked part",
                         e->rel) == 0;
    if (e->count == 0)
        return tool_fail(res, TOOL_NOT_FOUND,
                         "%s: old_text was not found. It must match the file exactly, including "
                         "whitespace and line breaks (read the file again to see its current "
                         "text)",
                         e->rel) == 0;
    if (e->count > 1 && !all)
        return tool_fail(res, TOOL_VALIDATION,
                         "%s: old_text matches %zu places; it must be unique. Add more "
                         "surrounding lines to old_text, or set all=true to replace every one",
                         e->rel, e->count) == 0;
    return 0;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    const char *old_arg = targ_str(args, "old_text", "");
    const char *new_arg = targ_str(args, "new_text", "");
    int all = targ_bool(args, "all", 0);
    size_t cap = (size_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20;
    size_t out_cap = tool_max_file_bytes();
    char leaf[NAME_MAX + 1], sz[32], sz2[32];
    struct edit *e = xcalloc(1, sizeof(*e));
    uint64_t new_size;
    int fd = -1, dfd = -1;
    int rc = 0;

    if (marks(new_arg) > marks(old_arg)) {
        tool_fail(res, TOOL_VALIDATION,
                  "edit: new_text holds " REDACTED ", the mask goald puts over a secret in "
                  "tool output, not text of the file: nothing was changed. Leave the masked "
                  "part out of old_text and new_text (edit the lines around it)");
        goto out;
    }
    strbuf_init(&e->raw, cap + 1);
    if ((rc = edit_open(ctx, res, e, path, old_arg, cap, &fd)) != 0) {
        if (rc == EDIT_STOP)
            rc = 0;
        goto out;
    }
    if ((rc = edit_load(e, fd, cap)) != 0)
        goto out;
    strbuf_init(&e->old_t, strlen(old_arg) + 1);
    strbuf_init(&e->new_t, strlen(new_arg) + 1);
    if ((rc = to_lf(&e->old_t, old_arg, strlen(old_arg))) != 0 ||
        (rc = to_lf(&e->new_t, new_arg, strlen(new_arg))) != 0)
        goto out;
    if (!(e->old_t.len == e->new_t.len &&
          !memcmp(strbuf_cstr(&e->old_t), strbuf_cstr(&e->new_t), e->old_t.len)) &&
        (rc = edit_find(e)) != 0)
        goto out;
    if (edit_refused(res, e, all))
        goto out;
    edit_spans(e, all ? e->count : 1);
    new_size = edit_new_size(&e->f);
    if (new_size > out_cap) {
        tool_fail(res, TOOL_POLICY,
                  "%s: the edited file would be %s, larger than tools.max_file_mb (%s): "
                  "nothing was changed",
                  e->rel, format_size(sz, sizeof(sz), (size_t)new_size),
                  format_size(sz2, sizeof(sz2), out_cap));
        goto out;
    }
    if ((rc = path_open_parent(&dfd, leaf, sizeof(leaf), ctx->root_fd, e->target, 0)) != 0)
        goto out;
    if (ctx->after_resolve)
        ctx->after_resolve(ctx->after_resolve_arg, e->target);
    if (tool_protected(ctx, e->target)) {
        tool_fail(res, TOOL_POLICY, "%s: protected by the goal's protected_paths", e->target);
        goto out;
    }
    if ((rc = fs_write_atomic_fill_at(dfd, leaf, fill, &e->f, e->st.st_mode & 07777)) != 0)
        goto out;
    rc = edit_report(res, e);
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    edit_release(e);
    free(e);
    return rc;
}

const struct tool_def tool_def_edit = {
    .name = "edit",
    .description = "Replace old_text with new_text in a file. old_text must occur once (all=true: "
                   "every occurrence); an exact match is tried first, then one ignoring "
                   "differences in blanks and typographic quotes and dashes. Line endings and a "
                   "BOM are kept. Returns a diff.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                  "\"old_text\":{\"type\":\"string\","
                  "\"description\":\"with enough context to be unique\"},"
                  "\"new_text\":{\"type\":\"string\"},\"all\":{\"type\":\"boolean\"}},"
                  "\"required\":[\"path\",\"old_text\",\"new_text\"]}",
    .run = run,
};
