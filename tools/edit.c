/* edit: replace text in a file; exact first, then whitespace/quote-normalised. */
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

#define BOM "\xEF\xBB\xBF"

/* CRLF pairs to LF, into out. */
static void to_lf(strbuf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
            continue;
        strbuf_addc(out, s[i]);
    }
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

static void norm_emit(struct norm *n, const char *s, size_t k, size_t from, size_t to)
{
    for (size_t i = 0; i < k; i++) {
        if (n->map) {
            while (n->qi < n->nq && n->q[n->qi] == n->idx) {
                n->ans[n->qi] = n->qi % 2 ? to : from;
                n->qi++;
            }
        } else {
            strbuf_addc(&n->text, s[i]);
        }
        n->idx++;
    }
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
static void normalise(struct norm *n, const char *s, size_t len)
{
    size_t i = 0, ws_from = 0, ws_to = 0;
    int pending = 0;

    while (i < len) {
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
            norm_emit(n, "\n", 1, i, i + 1);
            i++;
            continue;
        }
        if (pending) {
            norm_emit(n, " ", 1, ws_from, ws_to);
            pending = 0;
        }
        if (k) {
            norm_emit(n, rep, strlen(rep), i, i + k);
            i += k;
        } else {
            norm_emit(n, s + i, 1, i, i + 1);
            i++;
        }
    }
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
            *pos = realloc(*pos, cap * sizeof(size_t));
            if (!*pos)
                abort();
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
    {
        size_t at = ls;
        for (size_t i = 0; i < f->nsel; i++) {
            strbuf_add(&b, t + at, f->s[i] - at);
            strbuf_add(&b, f->repl, f->rlen);
            at = f->e[i];
        }
        strbuf_add(&b, t + at, le - at);
    }
    rc = diff_unified_at(out, name, t + ls, le - ls, strbuf_cstr(&b), b.len, line0, added,
                         removed);
    strbuf_release(&b);
    return rc;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    const char *old_arg = targ_str(args, "old_text", "");
    const char *new_arg = targ_str(args, "new_text", "");
    int all = targ_bool(args, "all", 0);
    size_t cap = (size_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20;
    size_t out_cap = tool_max_file_bytes();
    char rel[PATH_MAX], target[PATH_MAX], leaf[NAME_MAX + 1], sz[32], sz2[32];
    strbuf raw = STRBUF_INIT, lf = STRBUF_INIT, old_t = STRBUF_INIT, new_t = STRBUF_INIT;
    strbuf diff = STRBUF_INIT;
    struct norm nc, no;
    struct fill f;
    size_t *pos = NULL, *spans = NULL, count, nsel;
    size_t added = 0, removed = 0;
    const char *body, *text;
    size_t body_len, text_len;
    uint64_t new_size, new_nl;
    int bom = 0, crlf = 0, normalised = 0, diffed = 0;
    struct stat st;
    int fd = -1, dfd = -1;
    int rc = 0;

    memset(&nc, 0, sizeof(nc));
    memset(&no, 0, sizeof(no));
    memset(&f, 0, sizeof(f));
    strbuf_init(&raw, cap + 1);
    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        goto out;
    if ((rc = path_follow(target, sizeof(target), ctx->root_fd, rel)) != 0)
        goto out;
    if ((rc = path_open(&fd, ctx->root_fd, target, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0)) != 0)
        goto out;
    if (fstat(fd, &st) != 0) {
        rc = err_set(ERR_IO, "%s: %s", rel, strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        tool_fail(res, TOOL_VALIDATION, "%s: is a folder", rel);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        tool_fail_special(res, rel, st.st_mode);
        goto out;
    }
    if (!*old_arg) {
        tool_fail(res, TOOL_VALIDATION,
                  "edit: old_text: must not be empty (use write to create "
                  "a file)");
        goto out;
    }
    if ((uint64_t)st.st_size > cap) {
        tool_fail(res, TOOL_VALIDATION,
                  "%s: %s is larger than tools.read_max_mb (%s): edit it with bash (sed -i)",
                  rel, format_size(sz, sizeof(sz), (size_t)st.st_size),
                  format_size(sz2, sizeof(sz2), cap));
        goto out;
    }
    if ((rc = tool_read_fd(&raw, fd, cap, rel)) != 0)
        goto out;
    body = strbuf_cstr(&raw);
    body_len = raw.len;
    if (body_len >= 3 && !memcmp(body, BOM, 3)) {
        bom = 1;
        body += 3;
        body_len -= 3;
    }
    crlf = memmem(body, body_len, "\r\n", 2) != NULL;
    text = body;
    text_len = body_len;
    if (crlf) { /* only then a second copy, with LF */
        strbuf_init(&lf, body_len + 1);
        to_lf(&lf, body, body_len);
        strbuf_release(&raw);
        text = strbuf_cstr(&lf);
        text_len = lf.len;
    }
    strbuf_init(&old_t, strlen(old_arg) + 1);
    strbuf_init(&new_t, strlen(new_arg) + 1);
    to_lf(&old_t, old_arg, strlen(old_arg));
    to_lf(&new_t, new_arg, strlen(new_arg));
    if (old_t.len == new_t.len && !memcmp(strbuf_cstr(&old_t), strbuf_cstr(&new_t), old_t.len)) {
        tool_fail(res, TOOL_VALIDATION,
                  "edit: old_text and new_text are the same: nothing to "
                  "change");
        goto out;
    }

    count = find_all(text, text_len, old_t.buf, old_t.len, &pos);
    if (count == 0) {
        /* the normalised match; its positions are mapped back to the
         * original by a second pass */
        strbuf_init(&nc.text, text_len + 1);
        strbuf_init(&no.text, old_t.len + 1);
        normalise(&nc, text, text_len);
        normalise(&no, old_t.buf, old_t.len);
        if (no.text.len)
            count = find_all(strbuf_cstr(&nc.text), nc.text.len, no.text.buf, no.text.len, &pos);
        normalised = count > 0;
        strbuf_release(&nc.text);
    }
    if (count == 0) {
        tool_fail(res, TOOL_NOT_FOUND,
                  "%s: old_text was not found. It must match the file exactly, including "
                  "whitespace and line breaks (read the file again to see its current text)",
                  rel);
        goto out;
    }
    if (count > 1 && !all) {
        tool_fail(res, TOOL_VALIDATION,
                  "%s: old_text matches %zu places; it must be unique. Add more surrounding "
                  "lines to old_text, or set all=true to replace every one",
                  rel, count);
        goto out;
    }
    nsel = all ? count : 1;
    spans = malloc(2 * nsel * sizeof(*spans));
    if (!spans)
        abort();
    for (size_t i = 0; i < nsel; i++) {
        spans[2 * i] = pos[i];
        spans[2 * i + 1] = normalised ? pos[i] + no.text.len - 1 : pos[i] + old_t.len;
    }
    if (normalised) {
        size_t *q = malloc(2 * nsel * sizeof(*q));
        if (!q)
            abort();
        memcpy(q, spans, 2 * nsel * sizeof(*q));
        nc.map = 1;
        nc.idx = 0;
        nc.q = q;
        nc.nq = 2 * nsel;
        nc.ans = spans;
        normalise(&nc, text, text_len);
        free(q);
    }
    /* the spans: starts at even, ends at odd indexes */
    {
        size_t *s = malloc(nsel * sizeof(*s)), *e = malloc(nsel * sizeof(*e));
        if (!s || !e)
            abort();
        for (size_t i = 0; i < nsel; i++) {
            s[i] = spans[2 * i];
            e[i] = spans[2 * i + 1];
        }
        free(spans);
        spans = NULL;
        f.s = s;
        f.e = e;
    }
    f.bom = bom;
    f.crlf = crlf;
    f.text = text;
    f.len = text_len;
    f.nsel = nsel;
    f.repl = strbuf_cstr(&new_t);
    f.rlen = new_t.len;
    /* the new file's size, before anything is written: never cut to fit */
    new_size = (uint64_t)text_len + (uint64_t)nsel * new_t.len + (bom ? 3 : 0);
    new_nl = count_nl(text, text_len) + (uint64_t)nsel * count_nl(new_t.buf, new_t.len);
    for (size_t i = 0; i < nsel; i++) {
        new_size -= f.e[i] - f.s[i];
        new_nl -= count_nl(text + f.s[i], f.e[i] - f.s[i]);
    }
    if (crlf)
        new_size += new_nl;
    if (new_size > out_cap) {
        tool_fail(res, TOOL_POLICY,
                  "%s: the edited file would be %s, larger than tools.max_file_mb (%s): "
                  "nothing was changed",
                  rel, format_size(sz, sizeof(sz), (size_t)new_size),
                  format_size(sz2, sizeof(sz2), out_cap));
        goto out;
    }
    if ((rc = path_open_parent(&dfd, leaf, sizeof(leaf), ctx->root_fd, target, 0)) != 0)
        goto out;
    if (ctx->after_resolve)
        ctx->after_resolve(ctx->after_resolve_arg, target);
    if (tool_protected(ctx, target)) {
        tool_fail(res, TOOL_POLICY, "%s: protected by the goal's protected_paths", target);
        goto out;
    }
    if ((rc = fs_write_atomic_fill_at(dfd, leaf, fill, &f, st.st_mode & 07777)) != 0)
        goto out;
    diffed = diff_window(&diff, target, &f, &added, &removed) == 0;
    err_clear();
    strbuf_addf(&res->output, "Edited %s: replaced %zu occurrence%s%s.\n\n", rel, nsel,
                nsel == 1 ? "" : "s",
                normalised ? " (matched after normalising whitespace and quotes)" : "");
    if (!diffed) {
        strbuf_addf(&res->output, "[The change spans more than %s of the file: no diff is "
                                  "shown. Use read to see the result.]",
                    format_size(sz, sizeof(sz), DIFF_WINDOW_MAX));
    } else {
        struct trunc t;
        truncate_head(&t, strbuf_cstr(&diff), diff.len, tool_max_lines(), tool_max_bytes());
        strbuf_add(&res->output, strbuf_cstr(&diff), t.len);
        if (t.truncated) {
            res->truncated = 1;
            res->truncated_by = t.by;
            strbuf_addf(&res->output,
                        "\n[Diff cut at %zu of %zu lines (%s limit). Use read to "
                        "see the file.]",
                        t.lines, t.total_lines,
                        !strcmp(t.by, "bytes") ? format_size(sz, sizeof(sz), tool_max_bytes())
                                               : "line");
        }
        res->total_lines = (int64_t)t.total_lines;
        res->total_bytes = (int64_t)t.total_bytes;
    }
    cJSON_AddStringToObject(tool_meta(res), "path", target);
    cJSON_AddNumberToObject(tool_meta(res), "replacements", (double)nsel);
    cJSON_AddStringToObject(tool_meta(res), "match", normalised ? "normalised" : "exact");
    cJSON_AddBoolToObject(tool_meta(res), "crlf", crlf);
    cJSON_AddBoolToObject(tool_meta(res), "bom", bom);
    if (diffed) {
        cJSON_AddNumberToObject(tool_meta(res), "lines_added", (double)added);
        cJSON_AddNumberToObject(tool_meta(res), "lines_removed", (double)removed);
    }
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    free(pos);
    free(spans);
    free((void *)f.s);
    free((void *)f.e);
    norm_free(&nc);
    norm_free(&no);
    strbuf_release(&raw);
    strbuf_release(&lf);
    strbuf_release(&old_t);
    strbuf_release(&new_t);
    strbuf_release(&diff);
    return rc;
}

const struct tool_def tool_def_edit = {
    .name = "edit",
    .description =
        "Replace text in a file of the worktree. old_text must match exactly and be unique "
        "(unless all=true, which replaces every occurrence); when it does not match exactly, a "
        "match that ignores differences in blanks (tabs, spaces, trailing whitespace) and "
        "typographic quotes and dashes is tried. CRLF line endings and a UTF-8 BOM are kept. "
        "Returns a unified diff.",
    .parameters = "{\"type\":\"object\",\"properties\":{"
                  "\"path\":{\"type\":\"string\",\"description\":\"Path of the file, relative to "
                  "the worktree\"},"
                  "\"old_text\":{\"type\":\"string\",\"description\":\"The text to replace, "
                  "with enough context to be unique\"},"
                  "\"new_text\":{\"type\":\"string\",\"description\":\"The replacement\"},"
                  "\"all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence "
                  "(default false)\"}},"
                  "\"required\":[\"path\",\"old_text\",\"new_text\"],"
                  "\"additionalProperties\":false}",
    .run = run,
};
