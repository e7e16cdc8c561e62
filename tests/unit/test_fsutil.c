/* Unit tests: fs_write_atomic and fs_write_atomic_at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/fsutil.h"

static char *slurp(const char *path)
{
    strbuf sb = STRBUF_INIT;
    assert_int_equal(fs_read_file(&sb, path, 1 << 20), 0);
    return strbuf_detach(&sb, NULL);
}

static void test_write_atomic(void **state)
{
    char p[600], q[600];
    struct stat st;
    struct rlimit old, lim;
    char big[8192];
    char *d;

    (void)state;
    snprintf(p, sizeof(p), "%s/a.txt", testutil_dir);
    assert_int_equal(fs_write_atomic(p, "one", 3, 0640), 0);
    d = slurp(p);
    assert_string_equal(d, "one");
    free(d);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(fs_write_atomic(p, "two", 3, 0600), 0);
    d = slurp(p);
    assert_string_equal(d, "two");
    free(d);
    /* a failure before the rename leaves the old file and no temp file */
    memset(big, 'x', sizeof(big));
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1024;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    assert_int_equal(fs_write_atomic(p, big, sizeof(big), 0600), ERR_IO);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_non_null(strstr(err_last(), p));
    d = slurp(p);
    assert_string_equal(d, "two");
    free(d);
    snprintf(q, sizeof(q), "ls -A '%s' | grep -c goald-tmp", testutil_dir);
    assert_int_not_equal(system(q), 0); /* grep finds nothing */
    snprintf(q, sizeof(q), "%s/missing/x", testutil_dir);
    assert_int_equal(fs_write_atomic(q, "x", 1, 0600), ERR_NOTFOUND);
}

static void test_write_atomic_at_replaces_symlink(void **state)
{
    char target[600], link[600];
    int dfd;
    char *d;
    struct stat st;

    (void)state;
    snprintf(target, sizeof(target), "%s/target.txt", testutil_dir);
    snprintf(link, sizeof(link), "%s/link.txt", testutil_dir);
    assert_int_equal(fs_write_atomic(target, "keep", 4, 0600), 0);
    assert_int_equal(symlink(target, link), 0);
    dfd = open(testutil_dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(fs_write_atomic_at(dfd, "link.txt", "new", 3, 0600), 0);
    close(dfd);
    d = slurp(target);
    assert_string_equal(d, "keep");
    free(d);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

/* sha256 of a listing (names, types, sizes, modes, link targets) and of
 * the contents of every file below dir. */
static void tree_hash(char *out, size_t n, const char *dir)
{
    char cmd[2048];
    FILE *p;

    snprintf(cmd, sizeof(cmd),
             "cd '%s' && { find . -printf '%%p %%y %%s %%m %%l\\n' | LC_ALL=C sort; "
             "find . -type f -exec sha256sum {} + | LC_ALL=C sort; } | sha256sum",
             dir);
    p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, (int)n, p));
    pclose(p);
}

/* Links to outside, at every depth, are removed as links: what they name
 * is never entered, emptied or removed.  A deep tree goes without running
 * out of descriptors.  A link as the root is refused. */
static void test_remove_tree_never_follows_links(void **state)
{
    char tree[600], out[600], cmd[16384], before[200], after[200], link[700], f[700];
    struct stat st;
    struct rlimit old, lim;

    (void)state;
    testutil_tmp_path(tree, sizeof(tree), "rm/tree");
    testutil_tmp_path(out, sizeof(out), "rm/outside");
    snprintf(
        cmd, sizeof(cmd),
        "set -e; mkdir -p '%s/sub' '%s/a/b' '%s/s/deeper'; echo keep > '%s/file';"
        "echo secret > '%s/sub/inner'; echo x > '%s/a/b/f'; mkfifo '%s/s/fifo';"
        "ln -s '%s' '%s/a/b/dirlink'; ln -s '%s/file' '%s/filelink';"
        "ln -s '%s/sub' '%s/s/deeper/up'; ln -s / '%s/root';"
        "cd '%s'; for i in $(seq 1 300); do mkdir d; cd d; done; ln -s '%s' out; echo leaf > leaf",
        out, tree, tree, out, out, tree, tree, out, tree, out, tree, out, tree, tree, tree, out);
    assert_int_equal(system(cmd), 0);
    tree_hash(before, sizeof(before), out);
    /* 300 levels deep with 64 descriptors: one folder open at a time */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    lim = old;
    lim.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
    assert_int_equal(fs_remove_tree(tree), 0);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_not_equal(lstat(tree, &st), 0);
    tree_hash(after, sizeof(after), out);
    assert_string_equal(before, after);
    snprintf(f, sizeof(f), "%s/sub/inner", out);
    assert_int_equal(access(f, F_OK), 0);

    /* a link as the root: refused, and nothing behind it goes */
    snprintf(link, sizeof(link), "%s.link", tree);
    assert_int_equal(symlink(out, link), 0);
    assert_int_equal(fs_remove_tree(link), ERR_INVALID);
    assert_int_equal(lstat(link, &st), 0);
    tree_hash(after, sizeof(after), out);
    assert_string_equal(before, after);
    /* missing: fine */
    assert_int_equal(fs_remove_tree(tree), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_write_atomic_at_replaces_symlink),
        cmocka_unit_test(test_remove_tree_never_follows_links),
    };

    testutil_setup("fsutil");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
