/* Unit tests: verification plans detected from build files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "gates/detect.h"
#include "tests/unit/testutil.h"
#include "util/fsutil.h"

/* "name=command|name=command" of the gates found in a folder holding files. */
static char *detect_in(const char *dir, const char *const *files)
{
    static char out[1024];
    char root[512], path[700];
    cJSON *arr, *g;

    testutil_tmp_path(root, sizeof(root), dir);
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    for (int i = 0; files[i]; i += 2) {
        snprintf(path, sizeof(path), "%s/%s", root, files[i]);
        assert_int_equal(fs_write_atomic(path, files[i + 1], strlen(files[i + 1]), 0644), 0);
    }
    arr = gates_detect(root);
    out[0] = '\0';
    cJSON_ArrayForEach(g, arr)
    {
        size_t n = strlen(out);
        snprintf(out + n, sizeof(out) - n, "%s%s:%s=%s", n ? "|" : "",
                 cJSON_GetObjectItem(g, "type")->valuestring,
                 cJSON_GetObjectItem(g, "name")->valuestring,
                 cJSON_GetObjectItem(g, "command")->valuestring);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(g, "must_pass")));
    }
    cJSON_Delete(arr);
    return out;
}

static void test_detect(void **state)
{
    (void)state;
    assert_string_equal(detect_in("empty", (const char *[]){"README", "x", NULL}), "");
    assert_string_equal(
        detect_in("make", (const char *[]){"Makefile", "all:\n\tcc x.c\ntest: all\n\t./t\n", NULL}),
        "test:make test=make test");
    assert_string_equal(
        detect_in("check", (const char *[]){"Makefile", "check:\n\t./t\nX := 1\n", NULL}),
        "test:make check=make check");
    /* "test_x:" and "test =" are not a test target */
    assert_string_equal(detect_in("notest", (const char *[]){"Makefile",
                                                             "test_x:\n\ttrue\ntest = 1\n"
                                                             "all:\n\tcc x.c\n",
                                                             NULL}),
                        "build:make=make");
    assert_non_null(strstr(detect_in("cmake", (const char *[]){"CMakeLists.txt", "project(x)\n",
                                                                NULL}),
                           "test:ctest=ctest --test-dir build-goald"));
    assert_string_equal(
        detect_in("npm", (const char *[]){"package.json",
                                          "{\"scripts\":{\"test\":\"jest\",\"lint\":\"eslint\"}}",
                                          NULL}),
        "lint:npm run lint=npm run lint|test:npm test=npm test");
    assert_string_equal(detect_in("py", (const char *[]){"pyproject.toml",
                                                         "[tool.pytest.ini_options]\n", NULL}),
                        "test:pytest=python3 -m pytest -q");
    assert_string_equal(detect_in("go", (const char *[]){"go.mod", "module x\n", NULL}),
                        "build:go build=go build ./...|test:go test=go test ./...");
    assert_string_equal(detect_in("rust", (const char *[]){"Cargo.toml", "[package]\n", NULL}),
                        "build:cargo build=cargo build|test:cargo test=cargo test");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_detect)};
    testutil_setup("detect");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
