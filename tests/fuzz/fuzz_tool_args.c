/*
 * fuzz_tool_args - tools/: tool_call() with any arguments for the file
 * tools, on a real worktree.  The first input byte picks the tool (read,
 * ls, find, grep, write, edit; bit 7: the O_NOFOLLOW fallback of the path
 * policy instead of openat2), the rest is the JSON text of the arguments.
 * "@ROOT@" in it stands for the worktree's absolute path, so that the
 * fuzzer can try absolute paths and their near misses ("@ROOT@-outside").
 * bash is left out: it runs commands, in the sandbox (another harness).
 *
 * Before each call the worktree is made again: files, a folder, and
 * symlinks that lead out of it (to a folder and to a file beside it) or
 * nowhere.  Beside the worktree lie the canaries:
 *   BASE/root            the worktree
 *   BASE/root-outside/   must stay empty
 *   BASE/secret.txt      must keep its content, and never appear in output
 * Invariants checked after each call: nothing new in BASE or in
 * root-outside, secret.txt unchanged and unread, the worktree still a
 * folder, and the envelope well-formed (ok with no error class, or an
 * error class with a message).
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tests/fuzz/fuzz.h"
#include "tools/tool.h"
#include "util/strbuf.h"

#define SECRET "fuzz-canary: this line lives outside the worktree 7c1e"

static char base[PATH_MAX / 2], root[PATH_MAX / 2], outside[PATH_MAX / 2], secret[PATH_MAX / 2];
static char spill[PATH_MAX / 2];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static void put(const char *rel, const char *text)
{
    char p[PATH_MAX];
    int fd;

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        perror(p);
        abort();
    }
    close(fd);
}

static void link_to(const char *target, const char *rel)
{
    char p[PATH_MAX];

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    if (symlink(target, p) != 0) {
        perror(p);
        abort();
    }
}

/* The worktree, made again before every call. */
static void make_root(void)
{
    char p[PATH_MAX];

    if (nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && access(root, F_OK) == 0) {
        perror(root);
        abort();
    }
    if (mkdir(root, 0755) != 0) {
        perror(root);
        abort();
    }
    snprintf(p, sizeof(p), "%s/src", root);
    mkdir(p, 0755);
    put("README.md", "# demo\nhello world\n");
    put("src/main.c", "int main(void)\n{\n    return 0; /* hello */\n}\n");
    put("crlf.txt", "\xef\xbb\xbfone\r\ntwo\r\nthree\r\n");
    put("binary.bin", "\177ELF\001\002");
    put(".gitignore", "*.log\n");
    link_to("../root-outside", "out-dir");
    link_to(secret, "out-file");
    link_to("../secret.txt", "out-file-rel");
    link_to("src/main.c", "in-link");
    link_to("missing", "dangling");
    link_to("loop", "loop");
}

/* Whether s holds needle.  A loop of our own: libFuzzer watches strstr()
 * and memmem() and would feed the secret back into the arguments. */
static int contains(const char *s, const char *needle)
{
    size_t n = strlen(needle);

    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

static void check_canaries(const struct tool_result *r, const char *args)
{
    DIR *d;
    struct dirent *e;
    char buf[256];
    int fd;
    ssize_t n;
    struct stat st;

    d = opendir(outside);
    FUZZ_CHECK(d != NULL, "%s is gone", outside);
    while ((e = readdir(d)) != NULL)
        FUZZ_CHECK(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
                   "created outside the worktree: root-outside/%s", e->d_name);
    closedir(d);
    d = opendir(base);
    FUZZ_CHECK(d != NULL, "%s is gone", base);
    while ((e = readdir(d)) != NULL)
        FUZZ_CHECK(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                       !strcmp(e->d_name, "root") || !strcmp(e->d_name, "root-outside") ||
                       !strcmp(e->d_name, "secret.txt") || !strcmp(e->d_name, "spill"),
                   "created beside the worktree: %s", e->d_name);
    closedir(d);
    fd = open(secret, O_RDONLY | O_NOFOLLOW);
    FUZZ_CHECK(fd >= 0, "secret.txt is gone or replaced");
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    FUZZ_CHECK(n == (ssize_t)strlen(SECRET) && !memcmp(buf, SECRET, strlen(SECRET)),
               "secret.txt was changed");
    FUZZ_CHECK(lstat(root, &st) == 0 && S_ISDIR(st.st_mode), "the worktree is not a folder");
    /* (an error message may quote the arguments back) */
    FUZZ_CHECK(!contains(strbuf_cstr(&r->output), SECRET) || contains(args, SECRET),
               "secret.txt was read through the tool: %s", strbuf_cstr(&r->output));
}

static void cleanup(void)
{
    nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    int fd;

    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    snprintf(base, sizeof(base), "%s/goald-fuzz-tools.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror(base);
        exit(1);
    }
    snprintf(root, sizeof(root), "%s/root", base);
    snprintf(outside, sizeof(outside), "%s/root-outside", base);
    snprintf(secret, sizeof(secret), "%s/secret.txt", base);
    snprintf(spill, sizeof(spill), "%s/spill", base);
    if (mkdir(outside, 0755) != 0 || mkdir(spill, 0700) != 0) {
        perror(base);
        exit(1);
    }
    fd = open(secret, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 || write(fd, SECRET, strlen(SECRET)) != (ssize_t)strlen(SECRET)) {
        perror(secret);
        exit(1);
    }
    close(fd);
    atexit(cleanup);
    return 0;
}

/* The arguments with every "@ROOT@" replaced by the worktree's path; NULL
 * for an input that holds a NUL byte.  Free with free(). */
static char *expand(const uint8_t *data, size_t size)
{
    strbuf sb = STRBUF_INIT;
    char *text = fuzz_cstr(data, size), *p, *at;

    if (!text)
        return NULL;
    for (p = text; (at = strstr(p, "@ROOT@")) != NULL; p = at + 6) {
        if (strbuf_add(&sb, p, (size_t)(at - p)) != 0 || strbuf_adds(&sb, root) != 0)
            goto cut;
    }
    if (strbuf_adds(&sb, p) != 0)
        goto cut;
    free(text);
    return strbuf_detach(&sb, NULL);
cut: /* over the buffer's cap: not an input worth a run */
    free(text);
    strbuf_release(&sb);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"read", "ls", "find", "grep", "write", "edit"};
    struct tool_ctx ctx;
    struct tool_result r;
    char *args;

    if (size < 1)
        return -1;
    args = expand(data + 1, size - 1);
    if (!args)
        return -1;
    make_root();
    path_force_fallback(data[0] >> 7);
    memset(&ctx, 0, sizeof(ctx));
    ctx.root = root;
    ctx.spill_dir = spill;
    FUZZ_CHECK(tool_call(&ctx, names[(data[0] & 0x7f) % 6], args, &r) == 0,
               "tool_call did not return 0");
    FUZZ_CHECK(r.ok ? r.error_class == TOOL_OK : r.error_class != TOOL_OK && r.output.len > 0,
               "envelope: ok %d, class %d, output %zu bytes", r.ok, (int)r.error_class,
               r.output.len);
    check_canaries(&r, args);
    tool_result_release(&r);
    free(args);
    return 0;
}
