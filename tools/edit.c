/* edit: replace text in a file; exact first, then whitespace/quote-normalised. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
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

/* The normalised text and, for each of its bytes, the span of the
 * original it came from. */
struct norm {
    strbuf text;
    size_t *from, *to;
    size_t alloc;
};

static void norm_emit(struct norm *n, const char *s, size_t k, size_t from, size_t to)
{
    for (size_t i = 0; i < k; i++) {
        if (n->text.len + 1 > n->alloc) {
            n->alloc = n->alloc ? n->alloc * 2 : 256;
            n->from = realloc(n->from, n->alloc * sizeof(size_t));
            n->to = realloc(n->to, n->alloc * sizeof(size_t));
            if (!n->from || !n->to)
                abort();
        }
        n->from[n->text.len] = from;
        n->to[n->text.len] = to;
        strbuf_addc(&n->text, s[i]);
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
    free(n->from);
    free(n->to);
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

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    const char *old_arg = targ_str(args, "old_text", "");
    const char *new_arg = targ_str(args, "new_text", "");
    int all = targ_bool(args, "all", 0);
    size_t cap = (size_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20;
    char rel[PATH_MAX], target[PATH_MAX], leaf[NAME_MAX + 1];
    strbuf raw = STRBUF_INIT, lf = STRBUF_INIT, old_t = STRBUF_INIT, new_t = STRBUF_INIT;
    strbuf result = STRBUF_INIT, final = STRBUF_INIT, diff = STRBUF_INIT;
    struct norm nc = {0}, no = {0};
    size_t *pos = NULL, count, nsel;
    size_t added = 0, removed = 0;
    const char *body;
    size_t body_len;
    int bom = 0, crlf = 0, normalised = 0;
    struct stat st;
    int fd = -1, dfd = -1;
    int rc = 0;

    strbuf_init(&raw, cap + 1);
    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        goto out;
    if ((rc = path_follow(target, sizeof(target), ctx->root_fd, rel)) != 0)
        goto out;
    if ((rc = path_open(&fd, ctx->root_fd, target, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0)) != 0)
        goto out;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        tool_fail(res, TOOL_VALIDATION, "%s: not a regular file", rel);
        goto out;
    }
    if ((rc = tool_read_fd(&raw, fd, cap, rel)) != 0)
        goto out;
    if (!*old_arg) {
        tool_fail(res, TOOL_VALIDATION,
                  "edit: old_text: must not be empty (use write to create "
                  "a file)");
        goto out;
    }
    body = strbuf_cstr(&raw);
    body_len = raw.len;
    if (body_len >= 3 && !memcmp(body, BOM, 3)) {
        bom = 1;
        body += 3;
        body_len -= 3;
    }
    crlf = memmem(body, body_len, "\r\n", 2) != NULL;
    to_lf(&lf, body, body_len);
    to_lf(&old_t, old_arg, strlen(old_arg));
    to_lf(&new_t, new_arg, strlen(new_arg));
    if (old_t.len == new_t.len && !memcmp(strbuf_cstr(&old_t), strbuf_cstr(&new_t), old_t.len)) {
        tool_fail(res, TOOL_VALIDATION,
                  "edit: old_text and new_text are the same: nothing to "
                  "change");
        goto out;
    }

    count = find_all(strbuf_cstr(&lf), lf.len, old_t.buf, old_t.len, &pos);
    if (count == 0) {
        /* the normalised match: positions in nc map back to the original */
        normalise(&nc, strbuf_cstr(&lf), lf.len);
        normalise(&no, old_t.buf, old_t.len);
        if (no.text.len)
            count = find_all(strbuf_cstr(&nc.text), nc.text.len, no.text.buf, no.text.len, &pos);
        normalised = count > 0;
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
    {
        size_t at = 0;
        for (size_t i = 0; i < nsel; i++) {
            size_t s = pos[i], e = pos[i] + old_t.len;
            if (normalised) {
                s = nc.from[pos[i]];
                e = nc.to[pos[i] + no.text.len - 1];
            }
            strbuf_add(&result, strbuf_cstr(&lf) + at, s - at);
            strbuf_add(&result, strbuf_cstr(&new_t), new_t.len);
            at = e;
        }
        strbuf_add(&result, strbuf_cstr(&lf) + at, lf.len - at);
    }
    if (bom)
        strbuf_add(&final, BOM, 3);
    for (size_t i = 0; i < result.len; i++) {
        if (crlf && result.buf[i] == '\n')
            strbuf_addc(&final, '\r');
        strbuf_addc(&final, result.buf[i]);
    }
    if ((rc = path_open_parent(&dfd, leaf, sizeof(leaf), ctx->root_fd, target, 0)) != 0)
        goto out;
    if (ctx->after_resolve)
        ctx->after_resolve(ctx->after_resolve_arg, target);
    if (tool_protected(ctx, target)) {
        tool_fail(res, TOOL_POLICY, "%s: protected by the goal's protected_paths", target);
        goto out;
    }
    if ((rc = fs_write_atomic_at(dfd, leaf, strbuf_cstr(&final), final.len, st.st_mode & 07777)) !=
        0)
        goto out;
    diff_unified(&diff, target, strbuf_cstr(&lf), lf.len, strbuf_cstr(&result), result.len, &added,
                 &removed);
    strbuf_addf(&res->output, "Edited %s: replaced %zu occurrence%s%s.\n\n", rel, nsel,
                nsel == 1 ? "" : "s",
                normalised ? " (matched after normalising whitespace and quotes)" : "");
    {
        struct trunc t;
        char sz[32];
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
    cJSON_AddNumberToObject(tool_meta(res), "lines_added", (double)added);
    cJSON_AddNumberToObject(tool_meta(res), "lines_removed", (double)removed);
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    free(pos);
    norm_free(&nc);
    norm_free(&no);
    strbuf_release(&raw);
    strbuf_release(&lf);
    strbuf_release(&old_t);
    strbuf_release(&new_t);
    strbuf_release(&result);
    strbuf_release(&final);
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
