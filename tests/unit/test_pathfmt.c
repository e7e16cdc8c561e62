/* Unit tests: path_fmt, paths that fail rather than come out cut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gates/detect.h"
#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/path.h"
#include "util/url.h"

/* A path that fits is written whole, and one byte less room than it
 * needs (its NUL) is a failure. */
static void test_path_fmt_fits(void **state)
{
    char out[16];

    (void)state;
    assert_int_equal(path_fmt(out, sizeof(out), "%s/%s", "/tmp", "a.log"), 0);
    assert_string_equal(out, "/tmp/a.log");
    /* 15 bytes and its NUL: exactly the room there is */
    assert_int_equal(path_fmt(out, sizeof(out), "%s/%s", "/tmp/abcd", "efghi"), 0);
    assert_string_equal(out, "/tmp/abcd/efghi");
}

/* A path one byte too long fails with ERR_INVALID naming it, and what
 * is left in out is "", never the cut path (which names another file). */
static void test_path_fmt_cut_fails(void **state)
{
    char out[16];

    (void)state;
    memset(out, 'x', sizeof(out));
    err_clear();
    assert_int_equal(path_fmt(out, sizeof(out), "%s/%s", "/tmp/abcd", "efghij"), ERR_INVALID);
    assert_string_equal(out, "");
    assert_int_equal(err_last_code(), ERR_INVALID);
    assert_non_null(strstr(err_last(), "path too long: /tmp/abcd/efghi"));
    assert_non_null(strstr(err_last(), "16 bytes, at most 15"));
    /* a cut folder would be the folder above: ".../goald" for ".../goald2" */
    assert_int_equal(path_fmt(out, 11, "%s/%s", "/var/lib", "goald2"), ERR_INVALID);
    assert_string_equal(out, "");
}

/* No room at all is a failure too, and touches nothing. */
static void test_path_fmt_no_room(void **state)
{
    char out[4] = "abc";

    (void)state;
    assert_int_equal(path_fmt(out, 0, "%s", ""), ERR_INVALID);
    assert_string_equal(out, "abc");
    assert_int_equal(path_fmt(out, 1, "%s", ""), 0);
    assert_string_equal(out, "");
    assert_int_equal(path_fmt(out, 1, "%s", "a"), ERR_INVALID);
}

/* A caller: a resolved path that does not fit is no answer, never the
 * folder above it ("/usr/bin" cut to "/usr" is beneath "/usr" too). */
static void test_path_under_never_cut(void **state)
{
    char m[5];

    (void)state;
    assert_false(url_path_under("/usr/bin", "/usr", m, sizeof(m)));
    assert_true(url_path_under("/usr", "/usr", m, sizeof(m)));
    assert_string_equal(m, "/usr");
}

/* 1 when gates has one named name. */
static int has_gate(const cJSON *gates, const char *name)
{
    const cJSON *g;

    cJSON_ArrayForEach(g, gates)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(g, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            return 1;
    }
    return 0;
}

/* A caller whose cut path names another file: in a worktree whose path
 * is 4085 bytes, ROOT/Cargo.toml (4096 with its NUL: one too many for its
 * buffer) cut would be ROOT/Cargo.tom, a file the worktree may hold; the
 * guessed plan must not take it for Cargo.toml.  The same file in a short
 * worktree is found (the check can pass). */
static void test_detect_never_reads_a_cut_path(void **state)
{
    char root[4200], file[4300];
    cJSON *gates;
    size_t len;

    (void)state;
    testutil_tmp_path(root, sizeof(root), "short");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    assert_int_equal(path_fmt(file, sizeof(file), "%s/Cargo.toml", root), 0);
    assert_int_equal(fs_write_atomic(file, "[package]\n", 10, 0644), 0);
    assert_non_null(gates = gates_detect(root));
    assert_true(has_gate(gates, "cargo build"));
    cJSON_Delete(gates);

    testutil_tmp_path(root, sizeof(root), "long");
    while ((len = strlen(root)) < 4085) { /* components of at most 200 bytes */
        size_t k = 4085 - len - 1 > 200 ? 200 : 4085 - len - 1;
        root[len] = '/';
        memset(root + len + 1, 'd', k);
        root[len + 1 + k] = '\0';
    }
    assert_int_equal(strlen(root), 4085);
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    assert_int_equal(path_fmt(file, sizeof(file), "%s/Cargo.tom", root), 0);
    assert_int_equal(fs_write_atomic(file, "[package]\n", 10, 0644), 0);
    assert_non_null(gates = gates_detect(root));
    assert_false(has_gate(gates, "cargo build"));
    assert_int_equal(cJSON_GetArraySize(gates), 0);
    cJSON_Delete(gates);
    fs_remove_tree(testutil_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_fmt_fits),
        cmocka_unit_test(test_path_fmt_cut_fails),
        cmocka_unit_test(test_path_fmt_no_room),
        cmocka_unit_test(test_path_under_never_cut),
        cmocka_unit_test(test_detect_never_reads_a_cut_path),
    };

    testutil_setup("pathfmt");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
