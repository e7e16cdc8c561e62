/* read: a file's lines, head truncation, offset/limit paging. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tools/internal.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"

/* Open the file: beneath the worktree, or beneath the spill folder when
 * the path is absolute and inside it (bash output spilled there). */
static int open_target(struct tool_ctx *ctx, struct tool_result *res, const char *path, char *shown,
                       size_t n, int *fd_out)
{
    char spill[PATH_MAX], rel[PATH_MAX];
    size_t sl;
    int rc;

    if (path[0] == '/' && tool_spill_dir(ctx, spill, sizeof(spill)) == 0 && (sl = strlen(spill)) &&
        !strncmp(path, spill, sl) && path[sl] == '/') {
        int sfd = -1;
        if ((rc = path_rel(rel, sizeof(rel), spill, path)) != 0 ||
            (rc = path_open_root(&sfd, spill)) != 0)
            return tool_fail_err(res, rc), -1;
        rc = path_open(fd_out, sfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
        close(sfd);
        if (rc)
            return tool_fail_err(res, rc), -1;
        snprintf(shown, n, "%s", path); /* truncation: ok, a path shown, never opened */
        return 0;
    }
    err_clear();
    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        return -1;
    if ((rc = path_open(fd_out, ctx->root_fd, rel, O_RDONLY | O_NONBLOCK, 0)) != 0)
        return tool_fail_err(res, rc), -1;
    snprintf(shown, n, "%s", rel); /* truncation: ok, a path shown, never opened */
    return 0;
}

/* The file streamed in chunks: lines before the window are skipped, the
 * window (from line `offset`, at most `limit` lines) is kept up to one byte
 * past the byte limit (enough for truncate_head to decide exactly as on the
 * whole text), and lines after it are counted while the scan stays within
 * tools.read_max_mb.  Memory stays at a chunk plus the window, whatever the
 * file's size. */
struct scan {
    size_t line;       /* the line the next byte belongs to (1-based) */
    size_t start_line; /* the window's first */
    size_t end_line;   /* past the window (0: to the end) */
    size_t keep;       /* bytes of the window kept: max_bytes + 1 */
    strbuf win;
    size_t first_len; /* length of the window's first line (so far) */
    int first_done;
    int in_window, window_done;
    uint64_t bytes;    /* scanned */
    int last_nl;       /* the last byte scanned was '\n' */
};

static int scan_chunk(struct scan *sc, const char *p, size_t n)
{
    const char *end = p + n;
    int rc;

    if (n)
        sc->last_nl = end[-1] == '\n';
    sc->bytes += n;
    while (p < end) {
        const char *nl;
        size_t seg;
        if (!sc->in_window && !sc->window_done && sc->line >= sc->start_line)
            sc->in_window = 1;
        if (sc->in_window && sc->end_line && sc->line >= sc->end_line) {
            sc->in_window = 0;
            sc->window_done = 1;
        }
        nl = memchr(p, '\n', (size_t)(end - p));
        seg = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        if (sc->in_window) {
            if (sc->win.len < sc->keep) {
                size_t room = sc->keep - sc->win.len;
                if ((rc = strbuf_add(&sc->win, p, seg < room ? seg : room)) != 0)
                    return rc; /* win's cap is past keep: not reached */
            }
            if (!sc->first_done) {
                sc->first_len += nl ? seg - 1 : seg;
                sc->first_done = nl != NULL;
            }
        }
        if (nl)
            sc->line++;
        p += seg;
    }
    return 0;
}

#define READ_STOP 1 /* res is filled: the tool is done */

/* Scan the file at fd into sc (see struct scan); *counted is cleared when
 * a huge file's lines were not all counted.  A binary file fails res
 * (READ_STOP). */
static int read_scan(struct tool_result *res, struct scan *sc, int fd, const char *shown,
                     off_t size, size_t max_lines, int *counted)
{
    uint64_t count_cap = (uint64_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20;
    char chunk[65536], sz[32];
    int rc;

    for (;;) {
        size_t got;
        if ((rc = tool_read_chunk(fd, chunk, sizeof(chunk), &got, shown)) != 0)
            return rc;
        if (got == 0)
            break;
        if (sc->bytes < 8192 && memchr(chunk, '\0', (size_t)got < 8192 - sc->bytes
                                                        ? (size_t)got
                                                        : 8192 - sc->bytes)) {
            tool_fail(res, TOOL_VALIDATION,
                      "%s: a binary file (%s); use bash (file, xxd, od) to inspect it", shown,
                      format_size(sz, sizeof(sz), (size_t)size));
            return READ_STOP;
        }
        if ((rc = scan_chunk(sc, chunk, (size_t)got)) != 0)
            return rc;
        /* the window is complete when it ended, or holds more than the
         * limits will show (a byte past max_bytes, or a line past max_lines) */
        if ((sc->window_done || (sc->in_window && (sc->win.len >= sc->keep ||
                                                   sc->line > sc->start_line + max_lines + 1))) &&
            sc->bytes > count_cap) {
            *counted = 0; /* a huge file: stop counting its lines */
            break;
        }
    }
    return 0;
}

/* What was shown of the file, for the notice after it. */
struct read_view {
    const char *shown;
    size_t start_line, end_line, total;
    size_t first_len; /* of the window's first line */
    off_t size;
    size_t max_bytes;
};

/* A huge file whose lines were counted in its first tools.read_max_mb. */
static int notice_uncounted(struct tool_result *res, const struct read_view *v,
                            const struct trunc *t)
{
    uint64_t count_cap = (uint64_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20;
    char sz[32], sz2[32];

    cJSON_AddBoolToObject(tool_meta(res), "lines_counted", 0);
    res->truncated = 1;
    res->truncated_by = t->truncated ? t->by : "bytes";
    res->next_offset = (int64_t)v->end_line + 1;
    return strbuf_addf(&res->output,
                       "\n\n[Showing lines %zu-%zu of a %s file (more than %zu lines; lines are "
                       "counted in its first %s only). Use offset=%zu to continue, or bash with "
                       "head, tail or sed -n for parts of it.]",
                       v->start_line, v->end_line, format_size(sz, sizeof(sz), (size_t)v->size),
                       v->total, format_size(sz2, sizeof(sz2), (size_t)count_cap),
                       v->end_line + 1);
}

/* The first line shown is longer than the byte limit. */
static int notice_partial_line(struct tool_result *res, const struct read_view *v,
                               const struct trunc *t)
{
    char sz[32], sz2[32], sz3[32];
    int rc;

    res->truncated = 1;
    res->truncated_by = "bytes";
    rc = strbuf_addf(&res->output,
                     "\n\n[Line %zu is %s, over the %s limit: showing its first %s. See the rest "
                     "with bash: sed -n '%zup' %s | cut -b %zu-",
                     v->start_line, format_size(sz, sizeof(sz), v->first_len),
                     format_size(sz2, sizeof(sz2), v->max_bytes),
                     format_size(sz3, sizeof(sz3), t->len), v->start_line, v->shown, t->len + 1);
    if (v->end_line < v->total) {
        res->next_offset = (int64_t)v->end_line + 1;
        return rc ? rc
                  : strbuf_addf(&res->output, ". Use offset=%zu to continue.]", v->end_line + 1);
    }
    return rc ? rc : strbuf_adds(&res->output, "]");
}

/* The notice after the lines shown: how to continue, when there is more. */
static int read_notice(struct tool_result *res, const struct read_view *v, const struct trunc *t,
                       int counted, int64_t limit)
{
    char sz[32];
    int bytes;

    if (!counted)
        return notice_uncounted(res, v, t);
    if (t->partial_line)
        return notice_partial_line(res, v, t);
    if (t->truncated) {
        bytes = !strcmp(t->by, "bytes");
        res->truncated = 1;
        res->truncated_by = t->by;
        res->next_offset = (int64_t)v->end_line + 1;
        return strbuf_addf(&res->output,
                           "\n\n[Showing lines %zu-%zu of %zu%s%s%s. Use offset=%zu to "
                           "continue.]",
                           v->start_line, v->end_line, v->total, bytes ? " (" : "",
                           bytes ? format_size(sz, sizeof(sz), v->max_bytes) : "",
                           bytes ? " limit)" : "", v->end_line + 1);
    }
    if (limit > 0 && v->end_line < v->total) {
        res->next_offset = (int64_t)v->end_line + 1;
        return strbuf_addf(&res->output,
                           "\n\n[%zu more lines in file. Use offset=%zu to continue.]",
                           v->total - v->end_line, v->end_line + 1);
    }
    return 0;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    int64_t offset = targ_int(args, "offset", 1);
    int64_t limit = targ_int(args, "limit", 0);
    size_t max_lines = tool_max_lines(), max_bytes = tool_max_bytes();
    char shown[PATH_MAX];
    struct read_view v;
    struct scan sc;
    struct trunc t;
    struct stat st;
    size_t keep;
    int counted = 1; /* every line of the file was counted */
    int fd = -1;
    int rc = 0;

    memset(&sc, 0, sizeof(sc));
    strbuf_init(&sc.win, max_bytes + 2);
    if (open_target(ctx, res, path, shown, sizeof(shown), &fd) != 0)
        goto out;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        tool_fail(res, TOOL_VALIDATION, "%s: is a folder (use ls)", shown);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        tool_fail_special(res, shown, st.st_mode);
        goto out;
    }
    sc.line = 1;
    sc.start_line = (size_t)offset;
    sc.end_line = limit > 0 ? (size_t)offset + (size_t)limit : 0;
    sc.keep = max_bytes + 1;
    if ((rc = read_scan(res, &sc, fd, shown, st.st_size, max_lines, &counted)) != 0) {
        if (rc == READ_STOP)
            rc = 0;
        goto out;
    }
    v.shown = shown;
    v.size = st.st_size;
    v.max_bytes = max_bytes;
    v.first_len = sc.first_len;
    v.total = sc.bytes == 0 ? 0 : sc.line - (sc.last_nl ? 1 : 0);
    res->total_lines = (int64_t)v.total;
    res->total_bytes = counted ? (int64_t)sc.bytes : (int64_t)st.st_size;
    cJSON_AddStringToObject(tool_meta(res), "path", shown);
    if (v.total == 0) {
        if (offset > 1)
            tool_fail(res, TOOL_VALIDATION,
                      "%s: offset %lld is beyond the end of the file (it "
                      "is empty)",
                      shown, (long long)offset);
        else
            rc = strbuf_adds(&res->output, "[The file is empty.]");
        goto out;
    }
    if (counted && (size_t)offset > v.total) {
        tool_fail(res, TOOL_VALIDATION, "%s: offset %lld is beyond the end of the file (%zu lines)",
                  shown, (long long)offset, v.total);
        goto out;
    }
    v.start_line = (size_t)offset;
    truncate_head(&t, sc.win.buf ? sc.win.buf : "", sc.win.len, max_lines, max_bytes);
    v.end_line = v.start_line + t.lines - 1;
    keep = t.len && sc.win.buf[t.len - 1] == '\n' ? t.len - 1 : t.len;
    if ((rc = strbuf_add(&res->output, sc.win.buf, keep)) != 0)
        goto out;
    cJSON_AddNumberToObject(tool_meta(res), "start_line", (double)v.start_line);
    cJSON_AddNumberToObject(tool_meta(res), "end_line", (double)v.end_line);
    rc = read_notice(res, &v, &t, counted, limit);
out:
    if (fd >= 0)
        close(fd);
    strbuf_release(&sc.win);
    return rc;
}

const struct tool_def tool_def_read = {
    .name = "read",
    .description = "Read a text file, up to 2000 lines or 50KB at a time; a notice at the end "
                   "gives the offset to continue from. Also reads the full-output files bash "
                   "names.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                  "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"first line,"
                  " 1-based\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,"
                  "\"description\":\"most lines\"}},\"required\":[\"path\"]}",
    .run = run,
};
