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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_write_atomic_at_replaces_symlink),
    };

    testutil_setup("fsutil");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
