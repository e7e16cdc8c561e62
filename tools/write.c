/* write: create or replace (or append to) a file, atomically. */
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
#include "util/fsutil.h"
#include "util/redact.h"

static mode_t default_mode(void)
{
    mode_t um = umask(022);
    umask(um);
    return 0666 & ~um;
}

/* The new file: the old one's bytes (append), then content; streamed into
 * the temporary file, never assembled in memory. */
struct fill {
    int old_fd; /* -1: none */
    const char *content;
    size_t clen;
    size_t lines; /* newlines seen in the old file */
    int old_ends_nl;
    uint64_t old_left; /* the old file's size when checked against the cap */
};

static int fill(void *arg, int fd, const char *label)
{
    struct fill *f = arg;
    char chunk[65536];
    int rc;

    if (f->old_fd >= 0) {
        for (;;) {
            size_t got;
            if ((rc = tool_read_chunk(f->old_fd, chunk, sizeof(chunk), &got, label)) != 0)
                return rc;
            if (got == 0)
                break;
            if ((uint64_t)got > f->old_left) /* it grew since: never past the cap */
                return err_set(ERR_POLICY, "%s: changed while being appended to", label);
            f->old_left -= (uint64_t)got;
            for (const char *p = chunk; (p = memchr(p, '\n', (size_t)(chunk + got - p)));
                 p++)
                f->lines++;
            f->old_ends_nl = chunk[got - 1] == '\n';
            if ((rc = fs_write_all(fd, chunk, (size_t)got, label)) != 0)
                return rc;
        }
    }
    return fs_write_all(fd, f->content, f->clen, label);
}

#define WRITE_STOP 1 /* res is filled: the tool is done */

/* What is at leaf now: a folder or a special file fails res (WRITE_STOP);
 * *existed and *fmode (a regular file's mode) are set when there is
 * something to replace. */
static int write_existing(struct tool_result *res, int dfd, const char *leaf, const char *rel,
                          int *existed, mode_t *fmode)
{
    struct stat st;

    if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        tool_fail(res, TOOL_VALIDATION, "%s: is a folder", rel);
        return WRITE_STOP;
    }
    /* a symlink here appeared after path_follow(): the rename below
     * replaces it (never follows it); FIFOs and devices are refused */
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        tool_fail_special(res, rel, st.st_mode);
        return WRITE_STOP;
    }
    *existed = 1;
    if (S_ISREG(st.st_mode))
        *fmode = st.st_mode & 07777;
    return 0;
}

/* Open the file appended to into f (old_fd, old_left): one that is no
 * longer a regular file, or that would pass cap, fails res (WRITE_STOP). */
static int write_open_old(struct tool_result *res, struct fill *f, int dfd, const char *leaf,
                          const char *rel, size_t cap)
{
    char sz[32], sz2[32], sz3[32];
    struct stat st;

    f->old_fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f->old_fd < 0)
        return err_set(errno == ELOOP ? ERR_POLICY : ERR_IO, "%s: %s", rel,
                       errno == ELOOP ? "became a symlink" : strerror(errno));
    if (fstat(f->old_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        tool_fail_special(res, rel, st.st_mode);
        return WRITE_STOP;
    }
    f->old_left = (uint64_t)st.st_size;
    if (f->old_left + f->clen > cap) {
        tool_fail(res, TOOL_POLICY,
                  "%s: appending %s to its %s would make it larger than tools.max_file_mb "
                  "(%s): nothing was written",
                  rel, format_size(sz, sizeof(sz), f->clen),
                  format_size(sz2, sizeof(sz2), (size_t)f->old_left),
                  format_size(sz3, sizeof(sz3), cap));
        return WRITE_STOP;
    }
    return 0;
}

/* The result of a write of f (old_size bytes kept before the content). */
static int write_report(struct tool_result *res, const struct fill *f, uint64_t old_size,
                        const char *rel, const char *target, int append, int existed)
{
    char sz[32];
    /* the new file's lines: the old one's newlines, a line it left open
     * joined by the content, then the content's */
    size_t cl = text_lines(f->content, f->clen);
    size_t old_lines = f->lines + (old_size && !f->old_ends_nl ? 1 : 0);
    int rc;

    rc = strbuf_addf(&res->output, "%s %s to %s", append ? "Appended" : "Wrote",
                     format_size(sz, sizeof(sz), f->clen), rel);
    if (!rc && strcmp(target, rel))
        rc = strbuf_addf(&res->output, " (through the symlink, to %s)", target);
    res->total_bytes = (int64_t)(old_size + f->clen);
    if (old_size && !f->old_ends_nl && cl)
        cl--;
    res->total_lines = (int64_t)(old_lines + cl);
    cJSON_AddStringToObject(tool_meta(res), "path", target);
    cJSON_AddNumberToObject(tool_meta(res), "bytes_written", (double)f->clen);
    cJSON_AddBoolToObject(tool_meta(res), "created", !existed);
    return rc;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    const char *content = targ_str(args, "content", "");
    const char *mode = targ_str(args, "mode", "overwrite");
    int append = !strcmp(mode, "append");
    char rel[PATH_MAX], target[PATH_MAX], leaf[NAME_MAX + 1], sz[32], sz2[32];
    size_t clen = strlen(content);
    size_t cap = tool_max_file_bytes();
    uint64_t old_size = 0;
    mode_t fmode = default_mode();
    struct fill f = {-1, content, clen, 0, 0, 0};
    int dfd = -1;
    int existed = 0;
    int rc = 0;

    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        return 0;
    /* the mask copied from a tool's output would replace a secret in the
     * file with the mask */
    if (strstr(content, REDACTED))
        return tool_fail(res, TOOL_VALIDATION,
                         "%s: content holds " REDACTED ", the mask goald puts over a secret in "
                         "tool output, not real text: nothing was written. Use edit on the lines "
                         "around the secret instead (or bash, if the file must hold this text)",
                         rel);
    /* refused before anything is created: never cut to fit */
    if (clen > cap) {
        tool_fail(res, TOOL_POLICY,
                  "%s: %s of content is larger than tools.max_file_mb (%s): nothing was written",
                  rel, format_size(sz, sizeof(sz), clen), format_size(sz2, sizeof(sz2), cap));
        goto out;
    }
    /* a symlink inside the worktree is written through, once its target is
     * known to stay inside; one that leads out is refused */
    if ((rc = path_follow(target, sizeof(target), ctx->root_fd, rel)) != 0)
        goto out;
    if (!strcmp(target, ".")) {
        tool_fail(res, TOOL_VALIDATION, "%s: is the worktree itself", rel);
        goto out;
    }
    if ((rc = path_open_parent(&dfd, leaf, sizeof(leaf), ctx->root_fd, target, 1)) != 0)
        goto out;
    if (ctx->after_resolve)
        ctx->after_resolve(ctx->after_resolve_arg, target);
    if (tool_protected(ctx, target)) {
        tool_fail(res, TOOL_POLICY, "%s: protected by the goal's protected_paths", target);
        goto out;
    }
    if ((rc = write_existing(res, dfd, leaf, rel, &existed, &fmode)) != 0)
        goto out;
    if (append && existed) {
        if ((rc = write_open_old(res, &f, dfd, leaf, rel, cap)) != 0)
            goto out;
        old_size = f.old_left;
    }
    if ((rc = fs_write_atomic_fill_at(dfd, leaf, fill, &f, fmode)) != 0)
        goto out;
    rc = write_report(res, &f, old_size, rel, target, append, existed);
out:
    if (f.old_fd >= 0)
        close(f.old_fd);
    if (dfd >= 0)
        close(dfd);
    return rc == WRITE_STOP ? 0 : rc;
}

const struct tool_def tool_def_write = {
    .name = "write",
    .description = "Write a file atomically, creating parent folders: replace it (mode overwrite, "
                   "the default) or add to its end (append).",
    .parameters = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                  "\"content\":{\"type\":\"string\"},\"mode\":{\"type\":\"string\","
                  "\"enum\":[\"overwrite\",\"append\"]}},\"required\":[\"path\",\"content\"]}",
    .run = run,
};
