/* Unit tests: fs_write_atomic and fs_write_atomic_at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* fs_remove_tree(path) in a child without capabilities: root (as tests
 * here run) would pass over a folder's mode with CAP_DAC_OVERRIDE, where
 * goald running as a user is locked out just like the model.  Its rc. */
static int remove_tree_as_owner(const char *path)
{
    pid_t pid = fork();
    int st = 0;

    assert_true(pid >= 0);
    if (pid == 0) {
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];
        memset(d, 0, sizeof(d));
        if (syscall(SYS_capset, &h, d) != 0)
            _exit(99);
        _exit(fs_remove_tree(path));
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* Folders the model locked (chmod 000, 555, 111, the root itself 555)
 * are removed all the same; a link to an outside 0555 folder is removed as
 * a link: the folder keeps its content and its mode. */
static void test_remove_tree_locked_folders(void **state)
{
    char tree[600], out[600], cmd[20000], before[200], after[200];
    struct stat st;

    (void)state;
    testutil_tmp_path(tree, sizeof(tree), "locked/tree");
    testutil_tmp_path(out, sizeof(out), "locked/outside");
    snprintf(cmd, sizeof(cmd),
             "set -e; mkdir -p '%s/in' '%s/a/x' '%s/b/y' '%s/c' '%s/d/e/f';"
             "echo keep > '%s/in/keep'; chmod 0555 '%s/in' '%s';"
             "echo 1 > '%s/a/f'; echo 2 > '%s/a/x/g'; echo 3 > '%s/b/f'; echo 4 > '%s/b/y/g';"
             "echo 5 > '%s/c/f'; echo 6 > '%s/d/e/f/g'; ln -s '%s' '%s/b/out';"
             "ln -s '%s/in' '%s/d/e/in'; chmod 000 '%s/a/x' '%s/a'; chmod 0555 '%s/b/y' '%s/b';"
             "chmod 0111 '%s/c'; chmod 000 '%s/d/e/f'; chmod 0555 '%s/d/e'; chmod 000 '%s/d';"
             "chmod 0555 '%s'",
             out, tree, tree, tree, tree, out, out, out, tree, tree, tree, tree, tree, tree, out,
             tree, out, tree, tree, tree, tree, tree, tree, tree, tree, tree, tree);
    assert_int_equal(system(cmd), 0);
    tree_hash(before, sizeof(before), out);
    assert_int_equal(remove_tree_as_owner(tree), 0);
    assert_int_not_equal(lstat(tree, &st), 0);
    tree_hash(after, sizeof(after), out);
    assert_string_equal(before, after);
    assert_int_equal(lstat(out, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0555);
    snprintf(cmd, sizeof(cmd), "%s/in", out);
    assert_int_equal(lstat(cmd, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0555);
    snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'", out);
    assert_int_equal(system(cmd), 0);
}

/* A wide folder is read once, not once per sub-folder: 10000 sub-folders
 * cost about a second of CPU (the quadratic walk: 5e7 fstatat calls, tens
 * of seconds).  CPU time, not wall time: the test machine is shared. */
static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static void test_remove_tree_wide(void **state)
{
    char tree[600], cmd[2048];
    struct stat st;
    double t0;

    (void)state;
    testutil_tmp_path(tree, sizeof(tree), "wide/tree");
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s' && cd '%s' && seq -f 'd%%g' 1 10000 | xargs mkdir && "
             "mkdir d1/a d1/b && touch d2/f",
             tree, tree);
    assert_int_equal(system(cmd), 0);
    t0 = cpu_seconds();
    assert_int_equal(fs_remove_tree(tree), 0);
    assert_int_not_equal(lstat(tree, &st), 0);
    assert_true(cpu_seconds() - t0 < 8.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_write_atomic_at_replaces_symlink),
        cmocka_unit_test(test_remove_tree_never_follows_links),
        cmocka_unit_test(test_remove_tree_locked_folders),
        cmocka_unit_test(test_remove_tree_wide),
    };

    testutil_setup("fsutil");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
