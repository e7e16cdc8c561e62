/*
 * elaborate_view.c - the repository as the elaborate stage sees it
 * (elaborate_view.h).
 *
 * Top to bottom: the file tree, folder by folder from the root down
 * (tree_*: lstat only, no link followed, nothing read); a tool's output
 * cut for the prompt (tool_text); the README and the files the goal's
 * text names (through the read tool); the model's look requests (ls,
 * read, grep through the registry).
 */
#include "lifecycle/elaborate_view.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lifecycle/job.h"
#include "sandbox/path.h"
#include "tools/tool.h"
#include "tools/truncate.h"
#include "util/err.h"
#include "util/redact.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define TREE_ENTRIES 300 /* entries shown in all */
#define TREE_PER_DIR 40  /* entries shown of one folder */
#define TREE_DEPTH 4     /* folder levels opened below the root */
#define TREE_DIRS 200    /* folders opened */
#define TREE_NAMES 4096  /* entries read of one folder */
#define README_LINES 80
#define README_BYTES 4000
#define NAMED_FILES 3
#define NAMED_LINES 60
#define NAMED_BYTES 3000
#define NAMED_TOKENS 64 /* words of the goal's text looked at as paths */
#define LOOK_BYTES 6000

/* ---- the tree ---- */

struct folder {
    int fd;
    char *prefix; /* "" for the root, else "a/b/" */
    int depth;
};

struct tree_walk {
    strbuf out;
    struct folder *q;
    size_t head, n, cap;
    size_t shown, hidden, unopened, opened;
    int names_cut;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void tree_push(struct tree_walk *w, int fd, const char *prefix, int depth)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->q = xrealloc(w->q, w->cap * sizeof(*w->q));
    }
    w->q[w->n].fd = fd;
    w->q[w->n].prefix = xstrdup(prefix);
    w->q[w->n].depth = depth;
    w->n++;
}

/* The names in the folder fd (borrowed) but . and .. and git metadata,
 * sorted, at most TREE_NAMES; *count receives how many. */
static char **tree_names(struct tree_walk *w, int fd, size_t *count)
{
    int own = fd >= 0 ? dup(fd) : -1;
    DIR *d = own >= 0 ? fdopendir(own) : NULL;
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;

    *count = 0;
    if (!d) {
        if (own >= 0)
            close(own);
        return NULL;
    }
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || path_has_git(de->d_name))
            continue;
        if (n >= TREE_NAMES) {
            w->names_cut = 1;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = xrealloc(names, cap * sizeof(*names));
        }
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), by_name);
    *count = n;
    return names;
}

/* A name as the repository has it, but for control characters (a newline
 * would start a line of the prompt the repository wrote): '?' each. */
static void name_add(strbuf *out, const char *name)
{
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        if (strbuf_addc_cut(out, *c < 0x20 || *c == 0x7f ? '?' : (char)*c) != 0)
            return;
}

/* One entry of the folder f into the walk's line: its size, '/' for a
 * folder (queued when deep enough), '@' for a link (never followed). */
static void tree_entry(struct tree_walk *w, const struct folder *f, const char *name, int first)
{
    struct stat st;
    char sz[32], *sub;
    int fd;

    strbuf_adds_cut(&w->out, first ? " " : ", ");
    name_add(&w->out, name);
    w->shown++;
    if (f->fd < 0 || fstatat(f->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (S_ISLNK(st.st_mode)) {
        strbuf_adds_cut(&w->out, "@");
    } else if (S_ISREG(st.st_mode)) {
        strbuf_addf_cut(&w->out, " %s", format_size(sz, sizeof(sz), (size_t)st.st_size));
    } else if (S_ISDIR(st.st_mode)) {
        strbuf_adds_cut(&w->out, "/");
        if (f->depth + 1 > TREE_DEPTH || w->opened >= TREE_DIRS) {
            w->unopened++;
            return;
        }
        fd = openat(f->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return;
        w->opened++;
        sub = xmalloc(strlen(f->prefix) + strlen(name) + 2);
        /* truncation: ok, sized for it */
        snprintf(sub, strlen(f->prefix) + strlen(name) + 2, "%s%s/", f->prefix, name);
        tree_push(w, fd, sub, f->depth + 1);
        free(sub);
    }
}

/* The folder at the queue's head: one line "prefix: entries". */
static void tree_folder(struct tree_walk *w)
{
    struct folder f = w->q[w->head]; /* a copy: the queue may grow */
    size_t n = 0, k;
    char **names = tree_names(w, f.fd, &n);

    name_add(&w->out, f.prefix[0] ? f.prefix : ".");
    strbuf_adds_cut(&w->out, ":");
    for (k = 0; k < n && k < TREE_PER_DIR && w->shown < TREE_ENTRIES; k++)
        tree_entry(w, &f, names[k], k == 0);
    if (k < n) {
        strbuf_addf_cut(&w->out, "%s+%zu more", k ? ", " : " ", n - k);
        w->hidden += n - k;
    }
    strbuf_adds_cut(&w->out, "\n");
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The tree of root into user: folder by folder, the shallow ones first,
 * with what was left out said. */
static void tree_add(strbuf *user, const char *root)
{
    struct tree_walk w;
    strbuf red = STRBUF_INIT, clean = STRBUF_INIT;
    int fd;

    memset(&w, 0, sizeof(w));
    strbuf_init(&w.out, 1 << 18);
    if (path_open_root(&fd, root) != 0) {
        err_clear();
        return;
    }
    tree_push(&w, fd, "", 0);
    for (w.head = 0; w.head < w.n; w.head++) {
        if (w.shown >= TREE_ENTRIES) {
            w.unopened++;
        } else {
            tree_folder(&w);
        }
        if (w.q[w.head].fd >= 0)
            close(w.q[w.head].fd);
        free(w.q[w.head].prefix);
    }
    free(w.q);
    strbuf_adds_cut(user, "\nRepository tree (each folder: its entries, files with their "
                          "size, folders end in /, links end in @ and are not followed; .git "
                          "left out):\n");
    /* names are the repository's: valid UTF-8, secrets masked */
    if (utf8_sanitize(&clean, strbuf_cstr(&w.out), w.out.len, NULL) == 0 &&
        redact_text(&red, strbuf_cstr(&clean), clean.len, NULL) == 0)
        strbuf_add_cut(user, red.buf ? red.buf : "", red.len);
    err_clear();
    if (w.hidden || w.unopened || w.names_cut)
        strbuf_addf_cut(user,
                        "[tree cut: %s%zu entries not shown (at most %d a folder, %d in "
                        "all), %zu folders not listed (more than %d levels deep or past the "
                        "limits)%s; use look with ls to see more]\n",
                        w.names_cut ? "at least " : "", w.hidden, TREE_PER_DIR, TREE_ENTRIES,
                        w.unopened, TREE_DEPTH,
                        w.names_cut ? ", folders of over 4096 entries read in part" : "");
    strbuf_release(&w.out);
    strbuf_release(&red);
    strbuf_release(&clean);
}

/* ---- reads through the tools ---- */

static void view_ctx(struct tool_ctx *c, struct job_ctx *j, const char *root)
{
    static const char *const readonly[] = {"read", NULL}; /* also ls, find, grep */

    memset(c, 0, sizeof(*c));
    c->root = root;
    c->allowed = readonly;
    c->st = j->st;
    c->goal_id = j->goal->id;
    c->run_id = j->claim.run_id[0] ? j->claim.run_id : NULL;
    c->root_fd = -1;
}

/* Run tool with args (taken) and append its output, cut at whole lines
 * to max_bytes with a note.  0 when the tool succeeded. */
static int tool_text(strbuf *user, struct tool_ctx *c, const char *tool, cJSON *args,
                     size_t max_bytes)
{
    struct tool_result res;
    struct trunc t;
    const char *s;
    int ok;

    tool_call_json(c, tool, args, &res);
    cJSON_Delete(args);
    s = strbuf_cstr(&res.output);
    truncate_head(&t, s, res.output.len, (size_t)-1, max_bytes);
    strbuf_add_cut(user, s, t.len);
    if (t.len && s[t.len - 1] != '\n')
        strbuf_adds_cut(user, "\n");
    if (t.truncated)
        strbuf_addf_cut(user, "[cut at %zu bytes for this prompt; read with offset= for more]\n",
                        max_bytes);
    ok = res.ok;
    tool_result_release(&res);
    return ok ? 0 : -1;
}

static cJSON *read_args(const char *path, int limit)
{
    cJSON *a = cJSON_CreateObject();

    cJSON_AddStringToObject(a, "path", path);
    cJSON_AddNumberToObject(a, "limit", limit);
    return a;
}

/* The root's README (the first of the usual names present, a link
 * included: the read tool refuses one that leads out), or NULL. */
static const char *readme_name(int root_fd)
{
    static const char *const names[] = {"README.md", "README", "README.rst", "README.txt",
                                        "readme.md", "Readme.md", "README.markdown", NULL};
    struct stat st;

    for (int i = 0; names[i]; i++)
        if (fstatat(root_fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
            return names[i];
    return NULL;
}

/* 1 when the word w (len bytes) of the goal's text may name a file:
 * path characters only, a '/' or '.' in it, relative, no "..". */
static int path_like(const char *w, size_t len)
{
    int sep = 0;

    if (len < 3 || len > 255 || w[0] == '/' || w[0] == '-')
        return 0;
    for (size_t i = 0; i < len; i++)
        sep |= w[i] == '/' || (w[i] == '.' && i > 0);
    if (!sep)
        return 0;
    for (size_t i = 0; i + 1 < len; i++)
        if (w[i] == '.' && w[i + 1] == '.')
            return 0;
    return 1;
}

static int path_char(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/';
}

/* A regular file beneath root_fd (a link inside followed, one leading
 * out refused), not git metadata. */
static int is_file_beneath(int root_fd, const char *rel)
{
    struct stat st;
    int fd = -1, ok;

    if (path_has_git(rel) || path_open(&fd, root_fd, rel, O_PATH, 0) != 0) {
        err_clear();
        return 0;
    }
    ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    return ok;
}

/* The files the goal's text names that exist (at most NAMED_FILES, but
 * skip), each read in part. */
static void named_add(strbuf *user, struct tool_ctx *c, int root_fd, const char *text,
                      const char *skip)
{
    char *seen[NAMED_FILES];
    int nseen = 0, words = 0, more = 0;

    for (const char *p = text; p && *p && words < NAMED_TOKENS;) {
        size_t len = 0;
        char rel[256];
        while (*p && !path_char((unsigned char)*p))
            p++;
        while (p[len] && path_char((unsigned char)p[len]))
            len++;
        words += len > 0;
        /* a sentence's full stop, a folder's slash */
        while (len && (p[len - 1] == '.' || p[len - 1] == '/'))
            len--;
        if (path_like(p, len) && len < sizeof(rel)) {
            int dup = 0;
            snprintf(rel, sizeof(rel), "%.*s", (int)len, p); /* truncation: ok, len fits */
            for (int i = 0; i < nseen; i++)
                dup |= !strcmp(seen[i], rel);
            if (!dup && (!skip || strcmp(rel, skip)) && is_file_beneath(root_fd, rel)) {
                if (nseen >= NAMED_FILES) {
                    more++;
                } else {
                    seen[nseen++] = xstrdup(rel);
                    strbuf_addf_cut(user, "\nFile the goal names: %s\n", rel);
                    tool_text(user, c, "read", read_args(rel, NAMED_LINES), NAMED_BYTES);
                }
            }
        }
        while (*p && path_char((unsigned char)*p))
            p++;
    }
    if (more)
        strbuf_addf_cut(user, "[%d more files the goal names not shown: at most %d]\n", more,
                        NAMED_FILES);
    for (int i = 0; i < nseen; i++)
        free(seen[i]);
}

void elaborate_view_add(strbuf *user, struct job_ctx *j, const char *root)
{
    struct tool_ctx c;
    const char *readme;
    int fd;

    tree_add(user, root);
    if (path_open_root(&fd, root) != 0) {
        err_clear();
        return;
    }
    view_ctx(&c, j, root);
    if ((readme = readme_name(fd)) != NULL) {
        strbuf_addf_cut(user, "\n%s (first %d lines at most):\n", readme, README_LINES);
        tool_text(user, &c, "read", read_args(readme, README_LINES), README_BYTES);
    }
    named_add(user, &c, fd, j->goal->title, readme);
    named_add(user, &c, fd, j->goal->description, readme);
    close(fd);
}

/* ---- the model's looks ---- */

/* The arguments of one look request for its tool (a new object), or NULL
 * with the reason in why. */
static cJSON *look_args(const cJSON *req, const char *tool, const char **why)
{
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "path"));
    const char *pattern = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "pattern"));
    const cJSON *offset = cJSON_GetObjectItemCaseSensitive(req, "offset");
    const cJSON *limit = cJSON_GetObjectItemCaseSensitive(req, "limit");
    int is_read = !strcmp(tool, "read"), is_grep = !strcmp(tool, "grep");
    cJSON *a;

    if (path && path[0] == '/') {
        *why = "paths are relative to the repository's root";
        return NULL;
    }
    if ((is_read && (!path || !*path)) || (is_grep && (!pattern || !*pattern))) {
        *why = is_read ? "read needs a path" : "grep needs a pattern";
        return NULL;
    }
    a = cJSON_CreateObject();
    if (path && *path)
        cJSON_AddStringToObject(a, "path", path);
    if (is_grep)
        cJSON_AddStringToObject(a, "pattern", pattern);
    if (is_read && cJSON_IsNumber(offset) && offset->valuedouble >= 1)
        cJSON_AddNumberToObject(a, "offset", (double)(long)offset->valuedouble);
    cJSON_AddNumberToObject(a, "limit",
                            cJSON_IsNumber(limit) && limit->valuedouble >= 1 &&
                                    limit->valuedouble <= 500
                                ? (double)(long)limit->valuedouble
                                : is_grep ? 50
                                          : 200);
    return a;
}

int elaborate_view_look(strbuf *user, struct job_ctx *j, const char *root, const cJSON *look,
                        int turn, int last)
{
    struct tool_ctx c;
    const cJSON *req;
    int ran = 0, skipped = 0;

    view_ctx(&c, j, root);
    strbuf_addf_cut(user, "\nLook %d of %d: what you asked for.\n", turn, ELAB_LOOK_TURNS);
    cJSON_ArrayForEach(req, look)
    {
        const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "tool"));
        const char *why = NULL;
        cJSON *args;
        char *shown;
        if (ran >= ELAB_LOOK_CALLS) {
            skipped++;
            continue;
        }
        ran++;
        if (!tool || (strcmp(tool, "ls") && strcmp(tool, "read") && strcmp(tool, "grep"))) {
            strbuf_addf_cut(user, "### %.40s: not a look tool (ls, read, grep)\n",
                            tool ? tool : "(no tool)");
            continue;
        }
        if (!(args = look_args(req, tool, &why))) {
            strbuf_addf_cut(user, "### %s: %s\n", tool, why);
            continue;
        }
        shown = cJSON_PrintUnformatted(args);
        strbuf_addf_cut(user, "### %s %.300s\n", tool, shown ? shown : "{}");
        cJSON_free(shown);
        tool_text(user, &c, tool, args, LOOK_BYTES);
    }
    if (skipped)
        strbuf_addf_cut(user, "[%d more look requests not run: at most %d a turn]\n", skipped,
                        ELAB_LOOK_CALLS);
    if (last)
        strbuf_adds_cut(user, "No look is left: answer with the elaboration now.\n");
    else
        strbuf_addf_cut(user, "Answer with the elaboration, or look again (%d looks left).\n",
                        ELAB_LOOK_TURNS - turn);
    return ran;
}
