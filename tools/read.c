/* read: a file's lines, head truncation, offset/limit paging. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tools/internal.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"

/* Byte offset of the start of line `line` (1-based) in s. */
static size_t line_start(const char *s, size_t len, size_t line)
{
    size_t pos = 0;

    for (size_t l = 1; l < line && pos < len; l++) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        if (!nl)
            return len;
        pos = (size_t)(nl - s) + 1;
    }
    return pos;
}

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
        rc = path_open(fd_out, sfd, rel, O_RDONLY | O_NOFOLLOW, 0);
        close(sfd);
        if (rc)
            return tool_fail_err(res, rc), -1;
        snprintf(shown, n, "%s", path);
        return 0;
    }
    err_clear();
    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        return -1;
    if ((rc = path_open(fd_out, ctx->root_fd, rel, O_RDONLY | O_NONBLOCK, 0)) != 0)
        return tool_fail_err(res, rc), -1;
    snprintf(shown, n, "%s", rel);
    return 0;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    int64_t offset = targ_int(args, "offset", 1);
    int64_t limit = targ_int(args, "limit", 0);
    size_t max_lines = tool_max_lines(), max_bytes = tool_max_bytes();
    size_t cap = (size_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20;
    char shown[PATH_MAX], sz[32], sz2[32], sz3[32];
    strbuf text = STRBUF_INIT;
    struct trunc t;
    struct stat st;
    size_t total, from, to, start_line, end_line;
    int fd = -1;
    int rc = 0;

    strbuf_init(&text, cap + 1);
    if (open_target(ctx, res, path, shown, sizeof(shown), &fd) != 0)
        goto out;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        tool_fail(res, TOOL_VALIDATION, "%s: is a folder (use ls)", shown);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        tool_fail(res, TOOL_VALIDATION, "%s: not a regular file", shown);
        goto out;
    }
    if ((size_t)st.st_size > cap) {
        tool_fail(res, TOOL_VALIDATION,
                  "%s: %s is larger than tools.read_max_mb (%s); use bash with head, tail or "
                  "sed -n to read parts of it",
                  shown, format_size(sz, sizeof(sz), (size_t)st.st_size),
                  format_size(sz2, sizeof(sz2), cap));
        goto out;
    }
    if ((rc = tool_read_fd(&text, fd, cap, shown)) != 0)
        goto out;
    if (text.len && memchr(text.buf, '\0', text.len < 8192 ? text.len : 8192)) {
        tool_fail(res, TOOL_VALIDATION,
                  "%s: a binary file (%s); use bash (file, xxd, od) to inspect it", shown,
                  format_size(sz, sizeof(sz), text.len));
        goto out;
    }
    total = text_lines(strbuf_cstr(&text), text.len);
    res->total_lines = (int64_t)total;
    res->total_bytes = (int64_t)text.len;
    cJSON_AddStringToObject(tool_meta(res), "path", shown);
    if (total == 0) {
        if (offset > 1) {
            tool_fail(res, TOOL_VALIDATION,
                      "%s: offset %lld is beyond the end of the file (it "
                      "is empty)",
                      shown, (long long)offset);
            goto out;
        }
        strbuf_adds(&res->output, "[The file is empty.]");
        goto out;
    }
    if ((size_t)offset > total) {
        tool_fail(res, TOOL_VALIDATION, "%s: offset %lld is beyond the end of the file (%zu lines)",
                  shown, (long long)offset, total);
        goto out;
    }
    start_line = (size_t)offset;
    from = line_start(text.buf, text.len, start_line);
    to = limit > 0 ? line_start(text.buf, text.len, start_line + (size_t)limit) : text.len;
    truncate_head(&t, text.buf + from, to - from, max_lines, max_bytes);
    end_line = start_line + t.lines - 1;
    {
        size_t keep = t.len;
        if (keep && text.buf[from + keep - 1] == '\n')
            keep--;
        strbuf_add(&res->output, text.buf + from, keep);
    }
    cJSON_AddNumberToObject(tool_meta(res), "start_line", (double)start_line);
    cJSON_AddNumberToObject(tool_meta(res), "end_line", (double)end_line);
    if (t.partial_line) {
        size_t line_len = to - from;
        const char *nl = memchr(text.buf + from, '\n', to - from);
        if (nl)
            line_len = (size_t)(nl - (text.buf + from));
        res->truncated = 1;
        res->truncated_by = "bytes";
        strbuf_addf(&res->output,
                    "\n\n[Line %zu is %s, over the %s limit: showing its first %s. See the rest "
                    "with bash: sed -n '%zup' %s | cut -b %zu-",
                    start_line, format_size(sz, sizeof(sz), line_len),
                    format_size(sz2, sizeof(sz2), max_bytes), format_size(sz3, sizeof(sz3), t.len),
                    start_line, shown, t.len + 1);
        if (end_line < total) {
            res->next_offset = (int64_t)end_line + 1;
            strbuf_addf(&res->output, ". Use offset=%zu to continue.]", end_line + 1);
        } else {
            strbuf_adds(&res->output, "]");
        }
    } else if (t.truncated) {
        res->truncated = 1;
        res->truncated_by = t.by;
        res->next_offset = (int64_t)end_line + 1;
        strbuf_addf(&res->output,
                    "\n\n[Showing lines %zu-%zu of %zu%s%s%s. Use offset=%zu to "
                    "continue.]",
                    start_line, end_line, total, !strcmp(t.by, "bytes") ? " (" : "",
                    !strcmp(t.by, "bytes") ? format_size(sz, sizeof(sz), max_bytes) : "",
                    !strcmp(t.by, "bytes") ? " limit)" : "", end_line + 1);
    } else if (limit > 0 && end_line < total) {
        res->next_offset = (int64_t)end_line + 1;
        strbuf_addf(&res->output, "\n\n[%zu more lines in file. Use offset=%zu to continue.]",
                    total - end_line, end_line + 1);
    }
out:
    if (fd >= 0)
        close(fd);
    strbuf_release(&text);
    return rc;
}

const struct tool_def tool_def_read = {
    .name = "read",
    .description =
        "Read a text file of the worktree. Output is cut to 2000 lines or 50KB, whichever comes "
        "first; the notice at the end says how to continue (offset=N). Use offset and limit to "
        "page through large files.",
    .parameters = "{\"type\":\"object\",\"properties\":{"
                  "\"path\":{\"type\":\"string\",\"description\":\"Path of the file, relative to "
                  "the worktree (or absolute inside it)\"},"
                  "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Line number "
                  "to start at (1-based, default 1)\"},"
                  "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Most lines to "
                  "read (default: up to the output limit)\"}},"
                  "\"required\":[\"path\"],\"additionalProperties\":false}",
    .run = run,
};
