/* Unit tests: the path policy and escapes through the file tools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "tests/unit/testutil.h"
#include "tools/tool.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"

static char root[600], outside[600];
static struct tool_result R;
static void (*hook_fn)(void *, const char *);

static void setup_dirs(const char *name)
{
    char p[700];

    snprintf(root, sizeof(root), "%s/%s/wt", testutil_dir, name);
    snprintf(outside, sizeof(outside), "%s/%s/outside", testutil_dir, name);
    snprintf(p, sizeof(p), "%s/%s", testutil_dir, name);
    fs_remove_tree(p);
    assert_int_equal(fs_mkdir_p(root, 0755), 0);
    assert_int_equal(fs_mkdir_p(outside, 0755), 0);
}

static void mk(const char *base, const char *rel, const char *content)
{
    char p[1400], d[1400];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", base, rel);
    fs_dirname(d, sizeof(d), p);
    fs_mkdir_p(d, 0755);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static void ln(const char *target, const char *rel)
{
    char p[1400];

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(symlink(target, p), 0);
}

static char *slurp(const char *base, const char *rel)
{
    char p[1400];
    strbuf sb = STRBUF_INIT;

    snprintf(p, sizeof(p), "%s/%s", base, rel);
    if (fs_read_file(&sb, p, 1 << 20) != 0) {
        err_clear();
        return NULL;
    }
    return strbuf_detach(&sb, NULL);
}

static int outside_count(void)
{
    char cmd[1400];
    FILE *f;
    int n = -1;

    snprintf(cmd, sizeof(cmd), "find '%s' -mindepth 1 | wc -l", outside);
    f = popen(cmd, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

static const char *call(const char *name, const char *json)
{
    struct tool_ctx c;

    tool_result_release(&R);
    memset(&c, 0, sizeof(c));
    c.root = root;
    c.after_resolve = hook_fn;
    tool_call(&c, name, json, &R);
    return strbuf_cstr(&R.output);
}

static const char *callf(const char *name, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return call(name, buf);
}

static void assert_refused(const char *cls)
{
    if (R.ok || strcmp(tool_class_name(R.error_class), cls))
        fail_msg("expected %s, got ok=%d %s: %s", cls, R.ok, tool_class_name(R.error_class),
                 strbuf_cstr(&R.output));
}

static void test_rel(void **state)
{
    char rel[512];

    (void)state;
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "a/./b//c/"), 0);
    assert_string_equal(rel, "a/b/c");
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "."), 0);
    assert_string_equal(rel, ".");
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "/w/t"), 0);
    assert_string_equal(rel, ".");
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "/w/t/x/y"), 0);
    assert_string_equal(rel, "x/y");
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t/", "/w/t/x"), 0);
    assert_string_equal(rel, "x");
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "../x"), ERR_POLICY);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "a/../../x"), ERR_POLICY);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "a/.."), ERR_POLICY);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "/etc/passwd"), ERR_POLICY);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "/w/t2/x"), ERR_POLICY);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "/w/t/../t2"), ERR_POLICY);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", ""), ERR_INVALID);
    assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "..."), 0); /* a name, not ".." */
    assert_string_equal(rel, "...");
    /* git metadata: a .git component in any case, anywhere */
    {
        static const char *const bad[] = {".git",     ".GIT",      ".Git/config", "./.git",
                                          "a/.git",   "a/.gIT/x",  "a//.git/",    "/w/t/.git",
                                          "/w/t/a/.GIT/HEAD", NULL};
        for (size_t i = 0; bad[i]; i++) {
            assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", bad[i]), ERR_POLICY);
            assert_non_null(strstr(err_last(), bad[i]));
            assert_non_null(strstr(err_last(), ".git"));
        }
        assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", ".gitignore"), 0);
        assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", ".github/x"), 0);
        assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "a/.git-x"), 0);
        assert_int_equal(path_rel(rel, sizeof(rel), "/w/t", "x.git"), 0);
        /* the root's own spelling may hold one: only what is beneath counts */
        assert_int_equal(path_rel(rel, sizeof(rel), "/r/.git/wt", "/r/.git/wt/a"), 0);
        assert_string_equal(rel, "a");
        assert_int_equal(path_rel(rel, sizeof(rel), "/r/.git/wt", "a"), 0);
        assert_true(path_has_git("a/.GIT"));
        assert_false(path_has_git("a/.gitx"));
    }
}

/* A symlink inside the worktree that leads to .git is refused once resolved. */
static void test_git_through_link(void **state)
{
    int rfd, fd = -1, dfd = -1;
    char leaf[256], out[512];

    (void)state;
    setup_dirs("gitlink");
    mk(root, ".git/config", "[core]");
    mk(root, "sub/.GIT/HEAD", "x");
    mk(root, "ok.txt", "x");
    ln(".git", "x");
    ln("sub/.GIT", "y");
    ln("ok.txt", "z");
    assert_int_equal(path_open_root(&rfd, root), 0);
    for (int fb = 0; fb < 2; fb++) {
        path_force_fallback(fb);
        assert_int_equal(path_open(&fd, rfd, "x/config", O_RDONLY, 0), ERR_POLICY);
        assert_int_equal(path_open(&fd, rfd, "x", O_RDONLY | O_DIRECTORY, 0), ERR_POLICY);
        assert_int_equal(path_open(&fd, rfd, "y/HEAD", O_RDONLY, 0), ERR_POLICY);
        assert_int_equal(path_open_parent(&dfd, leaf, sizeof(leaf), rfd, "x/config", 0),
                         ERR_POLICY);
        if (!fb) { /* the fallback refuses every symlink */
            assert_int_equal(path_open(&fd, rfd, "z", O_RDONLY, 0), 0);
            close(fd);
        }
    }
    path_force_fallback(0);
    assert_int_equal(path_follow(out, sizeof(out), rfd, "x"), ERR_POLICY);
    assert_int_equal(path_follow(out, sizeof(out), rfd, "z"), 0);
    assert_string_equal(out, "ok.txt");
    close(rfd);
}

/* The escapes of the acceptance list through the file tools, in one mode. */
static void escapes(int fallback)
{
    char *d;

    path_force_fallback(fallback);
    setup_dirs(fallback ? "esc-walk" : "esc-openat2");
    mk(outside, "secret.txt", "outside secret\n");
    mk(root, "sub/in.txt", "inside\n");

    /* through .. */
    call("write", "{\"path\":\"../outside/x.txt\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("write", "{\"path\":\"sub/../../outside/x.txt\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("read", "{\"path\":\"../outside/secret.txt\"}");
    assert_refused("policy");
    /* through an absolute path */
    callf("write", "{\"path\":\"%s/x.txt\",\"content\":\"pwned\"}", outside);
    assert_refused("policy");
    callf("read", "{\"path\":\"%s/secret.txt\"}", outside);
    assert_refused("policy");
    call("ls", "{\"path\":\"/\"}");
    assert_refused("policy");
    /* through symlinks planted in the worktree: a folder, a relative
     * folder link, a file, a dangling one */
    ln(outside, "out");
    ln("../outside", "relout");
    {
        char t[800];
        snprintf(t, sizeof(t), "%s/secret.txt", outside);
        ln(t, "secret-link");
        snprintf(t, sizeof(t), "%s/new.txt", outside);
        ln(t, "dangling");
    }
    call("write", "{\"path\":\"out/x.txt\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("write", "{\"path\":\"out/deeper/x.txt\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("write", "{\"path\":\"relout/x.txt\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("write", "{\"path\":\"secret-link\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("write", "{\"path\":\"secret-link\",\"content\":\"pwned\",\"mode\":\"append\"}");
    assert_refused("policy");
    call("write", "{\"path\":\"dangling\",\"content\":\"pwned\"}");
    assert_refused("policy");
    call("edit", "{\"path\":\"secret-link\",\"old_text\":\"outside\",\"new_text\":\"pwned\"}");
    assert_refused("policy");
    call("read", "{\"path\":\"secret-link\"}");
    assert_refused("policy");
    call("read", "{\"path\":\"out/secret.txt\"}");
    assert_refused("policy");
    call("ls", "{\"path\":\"out\"}");
    assert_refused("policy");
    call("grep", "{\"pattern\":\"secret\",\"path\":\"out\"}");
    assert_refused("policy");
    call("find", "{\"pattern\":\"*\",\"path\":\"relout\"}");
    assert_refused("policy");
    /* nothing reached the outside folder */
    assert_int_equal(outside_count(), 1);
    d = slurp(outside, "secret.txt");
    assert_string_equal(d, "outside secret\n");
    free(d);
    /* and the worktree still works */
    call("write", "{\"path\":\"sub/ok.txt\",\"content\":\"fine\"}");
    assert_true(R.ok);
    call("read", "{\"path\":\"sub/in.txt\"}");
    assert_true(R.ok);
    assert_string_equal(strbuf_cstr(&R.output), "inside");
    path_force_fallback(0);
}

static void test_escapes_openat2(void **state)
{
    (void)state;
    escapes(0);
    assert_true(path_have_openat2()); /* kernel 5.6+: the test ran on openat2 */
}

static void test_escapes_walk(void **state)
{
    (void)state;
    escapes(1);
}

static void test_inside_symlinks(void **state)
{
    (void)state;
    path_force_fallback(0);
    setup_dirs("inside-links");
    mk(root, "real/f.txt", "hello\n");
    ln("real", "alias");
    call("read", "{\"path\":\"alias/f.txt\"}");
    assert_true(R.ok);
    assert_string_equal(strbuf_cstr(&R.output), "hello");
    /* the fallback walk refuses every symlink */
    path_force_fallback(1);
    call("read", "{\"path\":\"alias/f.txt\"}");
    assert_refused("policy");
    assert_true(strstr(strbuf_cstr(&R.output), "lacks openat2") != NULL);
    path_force_fallback(0);
}

/* The race: after the tool resolved the folder, the folder is swapped for
 * a symlink to the outside.  A path-based write would follow it. */
static void swap_dir(void *arg, const char *rel)
{
    char from[1400], to[1400];

    (void)arg;
    (void)rel;
    snprintf(from, sizeof(from), "%s/sub", root);
    snprintf(to, sizeof(to), "%s/sub.moved", root);
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(symlink(outside, from), 0);
}

/* ... or the file itself is replaced by a symlink to an outside file */
static void swap_leaf(void *arg, const char *rel)
{
    char p[1400], t[1400];

    (void)arg;
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    snprintf(t, sizeof(t), "%s/secret.txt", outside);
    unlink(p);
    assert_int_equal(symlink(t, p), 0);
}

static void race(int fallback)
{
    char *d;
    struct stat st;
    char p[1400];

    path_force_fallback(fallback);
    setup_dirs(fallback ? "race-walk" : "race-openat2");
    mk(outside, "secret.txt", "outside secret\n");
    mk(root, "sub/f.txt", "one two\n");

    hook_fn = swap_dir;
    call("write", "{\"path\":\"sub/new.txt\",\"content\":\"written\"}");
    hook_fn = NULL;
    assert_true(R.ok);
    assert_int_equal(outside_count(), 1); /* only secret.txt */
    d = slurp(root, "sub.moved/new.txt");
    assert_non_null(d);
    assert_string_equal(d, "written");
    free(d);

    /* the same for edit */
    snprintf(p, sizeof(p), "%s/sub", root);
    unlink(p);
    snprintf(p, sizeof(p), "%s/sub.moved", root);
    fs_remove_tree(p);
    mk(root, "sub/f.txt", "one two\n");
    hook_fn = swap_dir;
    call("edit", "{\"path\":\"sub/f.txt\",\"old_text\":\"one\",\"new_text\":\"three\"}");
    hook_fn = NULL;
    assert_true(R.ok);
    assert_int_equal(outside_count(), 1);
    d = slurp(root, "sub.moved/f.txt");
    assert_string_equal(d, "three two\n");
    free(d);

    /* the file swapped for a symlink: the symlink is replaced, not followed */
    snprintf(p, sizeof(p), "%s/sub", root);
    unlink(p);
    mk(root, "sub/g.txt", "old\n");
    hook_fn = swap_leaf;
    call("write", "{\"path\":\"sub/g.txt\",\"content\":\"new\"}");
    hook_fn = NULL;
    assert_true(R.ok);
    d = slurp(outside, "secret.txt");
    assert_string_equal(d, "outside secret\n");
    free(d);
    snprintf(p, sizeof(p), "%s/sub/g.txt", root);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    d = slurp(root, "sub/g.txt");
    assert_string_equal(d, "new");
    free(d);
    path_force_fallback(0);
}

static void test_race_openat2(void **state)
{
    (void)state;
    race(0);
}

static void test_race_walk(void **state)
{
    (void)state;
    race(1);
}

static void test_open_api(void **state)
{
    int rfd, fd, dfd;
    char leaf[256];

    (void)state;
    setup_dirs("api");
    mk(root, "a/b.txt", "x");
    assert_int_equal(path_open_root(&rfd, root), 0);
    assert_int_equal(path_open(&fd, rfd, "a/b.txt", O_RDONLY, 0), 0);
    close(fd);
    assert_int_equal(path_open(&fd, rfd, "a/none", O_RDONLY, 0), ERR_NOTFOUND);
    assert_int_equal(path_open_parent(&dfd, leaf, sizeof(leaf), rfd, "n/e/w/f.txt", 0),
                     ERR_NOTFOUND);
    assert_int_equal(path_open_parent(&dfd, leaf, sizeof(leaf), rfd, "n/e/w/f.txt", 1), 0);
    assert_string_equal(leaf, "f.txt");
    close(dfd);
    ln(outside, "o");
    assert_int_equal(path_open_parent(&dfd, leaf, sizeof(leaf), rfd, "o/new/f.txt", 1), ERR_POLICY);
    assert_int_equal(outside_count(), 0);
    close(rfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rel),          cmocka_unit_test(test_escapes_openat2),
        cmocka_unit_test(test_escapes_walk), cmocka_unit_test(test_inside_symlinks),
        cmocka_unit_test(test_race_openat2), cmocka_unit_test(test_race_walk),
        cmocka_unit_test(test_open_api),    cmocka_unit_test(test_git_through_link),
    };
    int rc;

    testutil_setup("path");
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    tool_result_release(&R);
    config_reset();
    return rc;
}
