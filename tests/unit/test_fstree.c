/* Unit tests: fs_tree_copy_at and fs_tree_size_at never follow a link. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/fstree.h"

static void put(const char *rel, const char *text)
{
    char p[700];
    FILE *f;

    testutil_tmp_path(p, sizeof(p), rel);
    assert_non_null(f = fopen(p, "w"));
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *rel)
{
    char p[700];
    strbuf sb = STRBUF_INIT;

    testutil_tmp_path(p, sizeof(p), rel);
    assert_int_equal(fs_read_file(&sb, p, 1 << 20), 0);
    return strbuf_detach(&sb, NULL);
}

static void mk(const char *rel)
{
    char p[700];

    testutil_tmp_path(p, sizeof(p), rel);
    assert_int_equal(fs_mkdir_p(p, 0755), 0);
}

static int root_fd(void)
{
    int fd = open(testutil_dir, O_RDONLY | O_DIRECTORY);

    assert_true(fd >= 0);
    return fd;
}

static void assert_link(const char *rel, const char *target)
{
    char p[700], buf[700];
    struct stat st;
    ssize_t n;

    testutil_tmp_path(p, sizeof(p), rel);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    n = readlink(p, buf, sizeof(buf) - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, target);
}

/* links copied as links (never followed), times and modes kept, a FIFO
 * left out, what the destination holds kept */
static void test_copy(void **state)
{
    char outside[700], p[700];
    struct timespec ts[2] = {{0, UTIME_OMIT}, {946684800, 0}};
    struct stat st;
    char *t;
    int fd;

    (void)state;
    mk("outside");
    put("outside/canary", "canary");
    testutil_tmp_path(outside, sizeof(outside), "outside");
    mk("src/w/deep/er");
    put("src/w/a.o", "object");
    put("src/w/deep/er/b.o", "deeper");
    testutil_tmp_path(p, sizeof(p), "src/w/a.o");
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    assert_int_equal(chmod(p, 0751), 0);
    testutil_tmp_path(p, sizeof(p), "src/w/out");
    assert_int_equal(symlink(outside, p), 0);
    testutil_tmp_path(p, sizeof(p), "src/w/fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    mk("dst/b");
    put("dst/b/a.o", "the tree's own");
    fd = root_fd();
    {
        int s = openat(fd, "src", O_RDONLY | O_DIRECTORY),
            d = openat(fd, "dst", O_RDONLY | O_DIRECTORY);
        uint64_t bytes = 0;
        assert_int_equal(fs_tree_copy_at(s, "w", d, "b", 1 << 20, &bytes), 0);
        assert_true(bytes >= 12);
        /* again: nothing replaced */
        assert_int_equal(fs_tree_copy_at(s, "w", d, "b", 1 << 20, NULL), 0);
        close(s);
        close(d);
    }
    close(fd);
    t = slurp("dst/b/a.o");
    assert_string_equal(t, "the tree's own");
    free(t);
    t = slurp("dst/b/deep/er/b.o");
    assert_string_equal(t, "deeper");
    free(t);
    assert_link("dst/b/out", outside);
    testutil_tmp_path(p, sizeof(p), "dst/b/fifo");
    assert_int_not_equal(lstat(p, &st), 0);
    /* the folder outside: as it was */
    testutil_tmp_path(p, sizeof(p), "outside/out");
    assert_int_not_equal(lstat(p, &st), 0);
    t = slurp("outside/canary");
    assert_string_equal(t, "canary");
    free(t);
    mk("dst2");
    fd = root_fd();
    {
        int s = openat(fd, "src", O_RDONLY | O_DIRECTORY),
            d = openat(fd, "dst2", O_RDONLY | O_DIRECTORY);
        assert_int_equal(fs_tree_copy_at(s, "w", d, "w", 1 << 20, NULL), 0);
        close(s);
        close(d);
    }
    close(fd);
    testutil_tmp_path(p, sizeof(p), "dst2/w/a.o");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, 946684800);
    assert_int_equal(st.st_mode & 0777, 0751);
}

/* a destination that is a link, or a source that is one: refused,
 * nothing written through it */
static void test_links_refused(void **state)
{
    char outside[700], p[700];
    struct stat st;
    int fd, s, d;

    (void)state;
    mk("o2");
    testutil_tmp_path(outside, sizeof(outside), "o2");
    mk("s2/w");
    put("s2/w/x", "x");
    mk("d2");
    testutil_tmp_path(p, sizeof(p), "d2/w");
    assert_int_equal(symlink(outside, p), 0);
    testutil_tmp_path(p, sizeof(p), "s2/l");
    assert_int_equal(symlink(outside, p), 0);
    fd = root_fd();
    s = openat(fd, "s2", O_RDONLY | O_DIRECTORY);
    d = openat(fd, "d2", O_RDONLY | O_DIRECTORY);
    assert_int_equal(fs_tree_copy_at(s, "w", d, "w", 1 << 20, NULL), ERR_POLICY);
    assert_int_equal(fs_tree_copy_at(s, "l", d, "l", 1 << 20, NULL), ERR_POLICY);
    {
        uint64_t n = 0;
        assert_int_equal(fs_tree_size_at(s, "l", 1 << 20, &n), ERR_POLICY);
    }
    close(s);
    close(d);
    close(fd);
    testutil_tmp_path(p, sizeof(p), "o2/x");
    assert_int_not_equal(lstat(p, &st), 0);
}

/* over the cap: ERR_TOOBIG, from the copy and from the size */
static void test_cap(void **state)
{
    char big[4096];
    uint64_t n = 0;
    int fd, s, d;

    (void)state;
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mk("s3/w");
    put("s3/w/big", big);
    mk("d3");
    fd = root_fd();
    s = openat(fd, "s3", O_RDONLY | O_DIRECTORY);
    d = openat(fd, "d3", O_RDONLY | O_DIRECTORY);
    assert_int_equal(fs_tree_size_at(s, "w", 1 << 20, &n), 0);
    assert_true(n >= 4095 && n < 4095 + 4096);
    assert_int_equal(fs_tree_size_at(s, "w", 1000, &n), ERR_TOOBIG);
    assert_int_equal(fs_tree_copy_at(s, "w", d, "w", 1000, NULL), ERR_TOOBIG);
    close(s);
    close(d);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_links_refused),
        cmocka_unit_test(test_cap),
    };

    testutil_setup("fstree");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
