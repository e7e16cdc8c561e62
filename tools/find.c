/* find: files by glob, with fd (respects .gitignore). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tools/internal.h"
#include "tools/search.h"
#include "tools/truncate.h"
#include "util/err.h"
#include "util/xalloc.h"

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Collect all of fd's output (the tail kept by the sandbox is not enough). */
static int collect(void *arg, const char *data, size_t len)
{
    return strbuf_add(arg, data, len) != 0; /* past the cap: stop fd */
}

/* fd's arguments for pattern into argv (room for 16; NULL-terminated);
 * maxr (32 bytes) holds the result cap, glob the glob. */
static int find_argv(const char **argv, char *maxr, strbuf *glob, const char *pattern,
                     int64_t limit)
{
    size_t an = 0;
    int rc = 0;

    snprintf(maxr, 32, "%lld", (long long)limit + 1); /* truncation: ok, a number fits */
    argv[an++] = "--glob";
    argv[an++] = "--color=never";
    argv[an++] = "--hidden";
    argv[an++] = "--exclude"; /* git metadata, in any case */
    argv[an++] = ".[gG][iI][tT]";
    argv[an++] = "--max-results";
    argv[an++] = maxr;
    if (strchr(pattern, '/')) {
        /* a pattern with a folder matches the whole path */
        argv[an++] = "--full-path";
        if (strncmp(pattern, "**/", 3) && pattern[0] != '/')
            rc = strbuf_adds(glob, "**/");
    }
    if (!rc)
        rc = strbuf_adds(glob, pattern);
    argv[an++] = "--";
    argv[an++] = strbuf_cstr(glob);
    argv[an] = NULL;
    return rc;
}

/* The lines of fd's output (all, cut in place), git metadata left out,
 * into *lines (malloc'd; the caller frees); returns how many. */
static size_t find_lines(char ***lines, char *all)
{
    size_t n = 0, cap = 0;

    *lines = NULL;
    for (char *p = all; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (*p && !path_has_git(p)) { /* fd was told not to go there: a second fence */
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                *lines = xrealloc(*lines, cap * sizeof(**lines));
            }
            (*lines)[n++] = p;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

/* The list (cut to the byte limit) and the notice, into res. */
static int find_report(struct tool_result *res, const strbuf *list, size_t n, int limited,
                       int64_t limit)
{
    char note[160];

    res->total_lines = (int64_t)n;
    if (limited)
        snprintf(note, sizeof(note), /* truncation: ok, a note */
                 "%lld results limit reached. Use limit=%lld for more, or "
                 "refine pattern",
                 (long long)limit, (long long)limit * 2);
    return tool_list_report(res, list, limited ? note : NULL, "results");
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    static const char *const names[] = {"fdfind", "fd", NULL};
    const char *pattern = targ_str(args, "pattern", "");
    const char *path = targ_str(args, "path", ".");
    int64_t limit = targ_int(args, "limit", 1000);
    char rel[PATH_MAX], maxr[32];
    strbuf glob = STRBUF_INIT, list = STRBUF_INIT, all = STRBUF_INIT;
    struct sandbox_result sres = {0};
    const char *argv[16];
    char **lines = NULL;
    size_t n = 0;
    int dfd = -1, have = 0, limited = 0;
    int rc = 0;

    if (!*pattern)
        return tool_fail(res, TOOL_VALIDATION, "find: pattern: must not be empty");
    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        return 0;
    if ((rc = path_open(&dfd, ctx->root_fd, rel, O_RDONLY | O_DIRECTORY, 0)) != 0)
        goto out;
    if ((rc = find_argv(argv, maxr, &glob, pattern, limit)) != 0)
        goto out;
    strbuf_init(&all, 32 << 20);
    if ((rc = tool_search_run(ctx, names, argv, dfd, -1, collect, &all, &sres)) != 0)
        goto out;
    have = 1;
    if (sres.timed_out) {
        tool_fail(res, TOOL_TIMEOUT, "find: fd ran past its timeout");
        goto out;
    }
    if (sres.exit_code != 0 && !sres.stopped) {
        tool_fail(res, TOOL_VALIDATION, "find: %s", sres.err.len ? sres.err.data : "fd failed");
        goto out;
    }
    n = find_lines(&lines, all.buf);
    if ((int64_t)n > limit) {
        limited = 1;
        n = (size_t)limit;
    }
    if (n)
        qsort(lines, n, sizeof(*lines), by_str);
    for (size_t i = 0; i < n && !rc; i++)
        rc = strbuf_addf(&list, "%s%s%s\n", strcmp(rel, ".") ? rel : "",
                         strcmp(rel, ".") ? "/" : "", lines[i]);
    if (rc)
        goto out;
    cJSON_AddStringToObject(tool_meta(res), "path", rel);
    cJSON_AddNumberToObject(tool_meta(res), "results", (double)n);
    if (n == 0)
        rc = strbuf_adds(&res->output, "No files found matching pattern");
    else
        rc = find_report(res, &list, n, limited, limit);
out:
    if (have)
        sandbox_result_release(&sres);
    free(lines);
    if (dfd >= 0)
        close(dfd);
    strbuf_release(&glob);
    strbuf_release(&list);
    strbuf_release(&all);
    return rc;
}

const struct tool_def tool_def_find = {
    .name = "find",
    .description = "Find files by glob: '*.c' matches names, a pattern with '/' ('src/**/*.h') "
                   "whole paths. Hidden files included, .gitignore respected.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\"},"
                  "\"path\":{\"type\":\"string\",\"description\":\"folder, default the root\"},"
                  "\"limit\":{\"type\":\"integer\",\"minimum\":1,"
                  "\"description\":\"default 1000\"}},\"required\":[\"pattern\"]}",
    .run = run,
};
