/* ls: the entries of a folder, sorted, folders marked with '/'. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tools/internal.h"
#include "tools/truncate.h"
#include "util/err.h"
#include "util/xalloc.h"

static int by_name(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int c = strcasecmp(x, y);
    return c ? c : strcmp(x, y);
}

/* Why rel (that path_open refused with rc as a folder) cannot be listed:
 * a special file fails res (0 returned); else an error code. */
static int ls_refused(struct tool_ctx *ctx, struct tool_result *res, const char *rel, int rc)
{
    struct stat st;
    int fd = -1;

    if (rc != ERR_NOTFOUND || path_open(&fd, ctx->root_fd, rel, O_PATH, 0) != 0)
        return rc;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        err_clear();
        rc = 0;
        tool_fail_special(res, rel, st.st_mode);
    } else {
        rc = err_set(ERR_INVALID, "%s: not a folder (use read)", rel);
    }
    close(fd);
    return rc;
}

/* The entries of d but . and .., folders ending in '/', into *names
 * (each and the array malloc'd; the caller frees); returns how many. */
static size_t ls_names(char ***names, DIR *d)
{
    struct dirent *de;
    size_t n = 0, cap = 0;

    *names = NULL;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char *name;
        int is_dir;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        is_dir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN &&
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            is_dir = S_ISDIR(st.st_mode);
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            *names = xrealloc(*names, cap * sizeof(**names));
        }
        if (asprintf(&name, "%s%s", de->d_name, is_dir ? "/" : "") < 0)
            xalloc_die(); /* asprintf fails only for want of memory */
        (*names)[n++] = name;
    }
    return n;
}

/* The list (cut to the byte limit) and the notice, into res. */
static int ls_report(struct tool_result *res, const strbuf *list, size_t n, int limited,
                     int64_t limit)
{
    char note[160];

    if (limited)
        snprintf(note, sizeof(note), /* truncation: ok, a note */
                 "%lld entries limit reached (%zu in all). Use limit=%lld "
                 "for more",
                 (long long)limit, n, (long long)limit * 2);
    return tool_list_report(res, list, limited ? note : NULL, "entries");
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    const char *path = targ_str(args, "path", ".");
    int64_t limit = targ_int(args, "limit", 500);
    char rel[PATH_MAX];
    char **names = NULL;
    size_t n = 0;
    strbuf list = STRBUF_INIT;
    DIR *d = NULL;
    int fd = -1;
    int rc = 0;
    int limited = 0;

    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        return 0;
    if ((rc = path_open(&fd, ctx->root_fd, rel, O_RDONLY | O_DIRECTORY, 0)) != 0) {
        rc = ls_refused(ctx, res, rel, rc);
        goto out;
    }
    d = fdopendir(fd);
    if (!d) {
        rc = err_set(ERR_IO, "%s: cannot list: %m", rel);
        goto out;
    }
    fd = -1; /* owned by d */
    n = ls_names(&names, d);
    if (n)
        qsort(names, n, sizeof(*names), by_name);
    res->total_lines = (int64_t)n;
    for (size_t i = 0; i < n && !rc; i++) {
        if ((int64_t)i >= limit) {
            limited = 1;
            break;
        }
        rc = strbuf_addf(&list, "%s\n", names[i]);
    }
    if (rc)
        goto out;
    cJSON_AddStringToObject(tool_meta(res), "path", rel);
    cJSON_AddNumberToObject(tool_meta(res), "entries", (double)n);
    if (n == 0)
        rc = strbuf_adds(&res->output, "(empty directory)");
    else
        rc = ls_report(res, &list, n, limited, limit);
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (d)
        closedir(d);
    if (fd >= 0)
        close(fd);
    strbuf_release(&list);
    return rc;
}

const struct tool_def tool_def_ls = {
    .name = "ls",
    .description = "List a folder (default: the worktree root): entries sorted by name, dotfiles "
                   "included, folders end in '/'.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                  "\"limit\":{\"type\":\"integer\",\"minimum\":1,"
                  "\"description\":\"default 500\"}}}",
    .run = run,
};
