/* write: create or replace (or append to) a file, atomically. */
#include <cjson/cJSON.h>
#include <errno.h>
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
#include "util/fsutil.h"

static mode_t default_mode(void)
{
    mode_t um = umask(022);
    umask(um);
    return 0666 & ~um;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", "");
    const char *content = targ_str(args, "content", "");
    const char *mode = targ_str(args, "mode", "overwrite");
    int append = !strcmp(mode, "append");
    char rel[PATH_MAX], target[PATH_MAX], leaf[NAME_MAX + 1], sz[32];
    strbuf data = STRBUF_INIT;
    size_t clen = strlen(content);
    mode_t fmode = default_mode();
    struct stat st;
    int dfd = -1, fd = -1;
    int existed = 0;
    int rc = 0;

    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        return 0;
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
    if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) {
            tool_fail(res, TOOL_VALIDATION, "%s: is a folder", rel);
            goto out;
        }
        /* a symlink here appeared after path_follow(): the rename below
         * replaces it (never follows it); FIFOs and devices are refused */
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
            tool_fail(res, TOOL_VALIDATION, "%s: not a regular file", rel);
            goto out;
        }
        existed = 1;
        if (S_ISREG(st.st_mode))
            fmode = st.st_mode & 07777;
    }
    strbuf_init(&data, (size_t)config_int(CFG_TOOLS_READ_MAX_MB) << 20);
    if (append && existed) {
        fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            rc = err_set(errno == ELOOP ? ERR_POLICY : ERR_IO, "%s: %s", rel,
                         errno == ELOOP ? "became a symlink" : strerror(errno));
            goto out;
        }
        if ((rc = tool_read_fd(&data, fd, data.cap, rel)) != 0)
            goto out;
    }
    if ((rc = strbuf_add(&data, content, clen)) != 0) {
        rc = err_set(ERR_TOOBIG, "%s: the file would exceed tools.read_max_mb", rel);
        goto out;
    }
    if ((rc = fs_write_atomic_at(dfd, leaf, data.buf ? data.buf : "", data.len, fmode)) != 0)
        goto out;
    strbuf_addf(&res->output, "%s %s to %s", append ? "Appended" : "Wrote",
                format_size(sz, sizeof(sz), clen), rel);
    if (strcmp(target, rel))
        strbuf_addf(&res->output, " (through the symlink, to %s)", target);
    res->total_bytes = (int64_t)data.len;
    res->total_lines = (int64_t)text_lines(strbuf_cstr(&data), data.len);
    cJSON_AddStringToObject(tool_meta(res), "path", target);
    cJSON_AddNumberToObject(tool_meta(res), "bytes_written", (double)clen);
    cJSON_AddBoolToObject(tool_meta(res), "created", !existed);
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    strbuf_release(&data);
    return rc;
}

const struct tool_def tool_def_write = {
    .name = "write",
    .description = "Write a file of the worktree: replace it (mode=overwrite, the default) or add "
                   "to its end (mode=append). Missing parent folders are created. The write is "
                   "atomic: readers see the old file or the new one, never a part.",
    .parameters = "{\"type\":\"object\",\"properties\":{"
                  "\"path\":{\"type\":\"string\",\"description\":\"Path of the file, relative to "
                  "the worktree\"},"
                  "\"content\":{\"type\":\"string\",\"description\":\"The text to write\"},"
                  "\"mode\":{\"type\":\"string\",\"enum\":[\"overwrite\",\"append\"],"
                  "\"description\":\"overwrite (default) or append\"}},"
                  "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
    .run = run,
};
