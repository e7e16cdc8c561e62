/* grep: search file contents with rg --json; lines cut at 500 characters. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tools/internal.h"
#include "tools/search.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"

struct grep_state {
    strbuf pending;     /* a partial JSON line */
    strbuf out;         /* formatted lines */
    const char *prefix; /* the searched folder relative to the root ("" for the root) */
    const char *file;   /* when searching one file (read from stdin): its path */
    int64_t limit;
    int64_t matches;
    int limited;
    int cut_lines;
    size_t line_max;
    int failed;
};

/* One formatted line into g->out; on failure (its cap) nothing of it. */
static int add_line(struct grep_state *g, const cJSON *data, char sep)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(data, "path");
    const cJSON *ptext = cJSON_GetObjectItemCaseSensitive(path, "text");
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(data, "lines");
    const cJSON *ltext = cJSON_GetObjectItemCaseSensitive(lines, "text");
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(data, "line_number");
    const char *p = cJSON_IsString(ptext) ? ptext->valuestring : "?";
    const char *text = cJSON_IsString(ltext) ? ltext->valuestring : "[not valid UTF-8]";
    size_t len = strlen(text), cut, start = g->out.len;
    int rc;

    if (g->file)
        p = g->file;
    else if (!strncmp(p, "./", 2))
        p += 2;
    if (path_has_git(p)) /* rg was told not to go there: a second fence */
        return 0;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    cut = utf8_prefix_chars(text, len, g->line_max);
    rc = strbuf_addf(&g->out, "%s%s%s%c%lld%c ", g->prefix, *g->prefix ? "/" : "", p, sep,
                     cJSON_IsNumber(num) ? (long long)num->valuedouble : 0LL, sep);
    if (!rc)
        rc = strbuf_add(&g->out, text, cut);
    if (!rc && cut < len) {
        rc = strbuf_adds(&g->out, "... [truncated]");
        g->cut_lines = 1;
    }
    if (!rc)
        rc = strbuf_addc(&g->out, '\n');
    if (rc)
        strbuf_setlen(&g->out, start);
    return rc;
}

/* One line of rg --json; non-zero to stop rg. */
static int on_json(struct grep_state *g, const char *line)
{
    cJSON *o = cJSON_Parse(line);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    int stop = 0;

    if (cJSON_IsString(type)) {
        if (!strcmp(type->valuestring, "match")) {
            if (g->matches >= g->limit) {
                g->limited = 1;
                stop = 1;
            } else {
                g->matches++;
                stop = add_line(g, data, ':') != 0; /* out is full: far past what is shown */
            }
        } else if (!strcmp(type->valuestring, "context") && g->matches < g->limit + 1) {
            stop = add_line(g, data, '-') != 0;
        }
    }
    cJSON_Delete(o);
    return stop;
}

static int on_data(void *arg, const char *data, size_t len)
{
    struct grep_state *g = arg;
    const char *p = data, *end = data + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            if (strbuf_add(&g->pending, p, (size_t)(end - p)) != 0)
                return g->failed = 1;
            return 0;
        }
        if (strbuf_add(&g->pending, p, (size_t)(nl - p)) != 0)
            return g->failed = 1;
        if (on_json(g, strbuf_cstr(&g->pending)))
            return 1;
        strbuf_reset(&g->pending);
        if (g->out.len > (size_t)8 << 20)
            return 1; /* far past what will be shown */
        p = nl + 1;
    }
    return 0;
}

/* rg's arguments for args into argv (room for 24; NULL-terminated);
 * ctxn (32 bytes) holds the context number. */
static void grep_argv(const char **argv, char *ctxn, const cJSON *args, const char *pattern,
                      int is_file)
{
    const char *glob = targ_str(args, "glob", NULL);
    int64_t context = targ_int(args, "context", 0);
    size_t an = 0;

    argv[an++] = "--json";
    argv[an++] = "--hidden";
    argv[an++] = "--color=never";
    if (targ_bool(args, "ignore_case", 0))
        argv[an++] = "--ignore-case";
    if (targ_bool(args, "literal", 0))
        argv[an++] = "--fixed-strings";
    if (glob && *glob) {
        argv[an++] = "--glob";
        argv[an++] = glob;
    }
    if (context > 0) {
        snprintf(ctxn, 32, "%lld", (long long)context); /* truncation: ok, a number fits */
        argv[an++] = "--context";
        argv[an++] = ctxn;
    }
    /* last, so that no glob of the model's re-includes it (rg: the later
     * glob wins): never descend into git metadata, in any case */
    argv[an++] = "--iglob";
    argv[an++] = "!.git";
    argv[an++] = "--regexp";
    argv[an++] = pattern;
    argv[an++] = "--";
    /* a folder is searched as the working directory, a file through stdin:
     * both fds were opened beneath the root */
    argv[an++] = is_file ? "-" : "./";
    argv[an] = NULL;
}

/* The notice after the matches: "[...]" naming each limit that was hit. */
static int grep_notice(strbuf *out, const struct grep_state *g, const struct trunc *t)
{
    char sz[32];
    const char *sep = "";
    int rc = strbuf_adds(out, "\n\n[");

    if (!rc && g->limited) {
        rc = strbuf_addf(out,
                         "%lld matches limit reached. Use limit=%lld for more, or "
                         "refine pattern",
                         (long long)g->limit, (long long)g->limit * 2);
        sep = ". ";
    }
    if (!rc && t->truncated) {
        rc = strbuf_addf(out, "%s%s limit reached: showing %zu lines", sep,
                         format_size(sz, sizeof(sz), tool_max_bytes()), t->lines);
        sep = ". ";
    }
    if (!rc && g->cut_lines)
        rc = strbuf_addf(out,
                         "%sSome lines truncated to %zu chars. Use read to see "
                         "full lines",
                         sep, g->line_max);
    return rc ? rc : strbuf_adds(out, "]");
}

/* The matches found (cut to the byte limit) and the notice, into res. */
static int grep_report(struct tool_result *res, const struct grep_state *g)
{
    struct trunc t;
    int rc;

    truncate_head(&t, strbuf_cstr(&g->out), g->out.len, (size_t)-1, tool_max_bytes());
    rc = strbuf_add(&res->output, g->out.buf,
                    t.len && g->out.buf[t.len - 1] == '\n' ? t.len - 1 : t.len);
    res->total_lines = (int64_t)t.total_lines;
    res->total_bytes = (int64_t)g->out.len;
    if (g->limited || t.truncated || g->cut_lines) {
        if (!rc)
            rc = grep_notice(&res->output, g, &t);
        if (g->limited || t.truncated) {
            res->truncated = 1;
            res->truncated_by = t.truncated ? "bytes" : "limit";
        }
        cJSON_AddBoolToObject(tool_meta(res), "lines_cut", g->cut_lines);
    }
    return rc;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    static const char *const names[] = {"rg", NULL};
    const char *pattern = targ_str(args, "pattern", "");
    const char *path = targ_str(args, "path", ".");
    char rel[PATH_MAX], ctxn[32];
    struct grep_state g;
    struct sandbox_result sres = {0};
    const char *argv[24];
    struct stat st;
    int fd = -1, have = 0, is_file = 0;
    int rc = 0;

    memset(&g, 0, sizeof(g));
    strbuf_init(&g.pending, 16 << 20);
    strbuf_init(&g.out, 16 << 20);
    g.limit = targ_int(args, "limit", 100);
    g.line_max = (size_t)config_int(CFG_TOOLS_GREP_LINE_MAX);
    if (!*pattern) {
        tool_fail(res, TOOL_VALIDATION, "grep: pattern: must not be empty");
        goto out;
    }
    if (tool_path(ctx, res, path, rel, sizeof(rel)) != 0)
        goto out;
    if ((rc = path_open(&fd, ctx->root_fd, rel, O_RDONLY | O_NONBLOCK, 0)) != 0)
        goto out;
    if (fstat(fd, &st) != 0) {
        rc = err_set(ERR_IO, "%s: %m", rel);
        goto out;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        tool_fail_special(res, rel, st.st_mode);
        goto out;
    }
    is_file = !S_ISDIR(st.st_mode);
    g.prefix = is_file || !strcmp(rel, ".") ? "" : rel;
    g.file = is_file ? rel : NULL;
    grep_argv(argv, ctxn, args, pattern, is_file);
    if ((rc = tool_search_run(ctx, names, argv, is_file ? -1 : fd, is_file ? fd : -1, on_data, &g,
                              &sres)) != 0)
        goto out;
    have = 1;
    if (sres.timed_out) {
        tool_fail(res, TOOL_TIMEOUT, "grep: rg ran past its timeout");
        goto out;
    }
    if (g.pending.len && !sres.stopped)
        on_json(&g, strbuf_cstr(&g.pending));
    if (sres.exit_code == 2 && g.matches == 0 && !sres.stopped) {
        tool_fail(res, TOOL_VALIDATION, "grep: %s", sres.err.len ? sres.err.data : "rg failed");
        goto out;
    }
    cJSON_AddStringToObject(tool_meta(res), "path", rel);
    cJSON_AddNumberToObject(tool_meta(res), "matches", (double)g.matches);
    if (g.matches == 0)
        rc = strbuf_adds(&res->output, "No matches found");
    else
        rc = grep_report(res, &g);
out:
    if (have)
        sandbox_result_release(&sres);
    if (fd >= 0)
        close(fd);
    strbuf_release(&g.pending);
    strbuf_release(&g.out);
    return rc;
}

const struct tool_def tool_def_grep = {
    .name = "grep",
    .description = "Search file contents with a ripgrep regex; hidden files included, .gitignore "
                   "respected. Prints path:LINE: text (context lines path-LINE- text); lines over "
                   "500 characters are cut.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\"},"
                  "\"path\":{\"type\":\"string\",\"description\":\"folder or file,"
                  " default the root\"},\"glob\":{\"type\":\"string\","
                  "\"description\":\"e.g. *.c or !*.md\"},"
                  "\"ignore_case\":{\"type\":\"boolean\"},\"literal\":{\"type\":\"boolean\","
                  "\"description\":\"pattern is plain text\"},"
                  "\"context\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":100,"
                  "\"description\":\"lines around each match\"},"
                  "\"limit\":{\"type\":\"integer\",\"minimum\":1,"
                  "\"description\":\"default 100\"}},\"required\":[\"pattern\"]}",
    .run = run,
};
