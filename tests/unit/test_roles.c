/* Unit tests: which paths are test, support, config, shadow or product
 * for the runners of a plan (gates/roles.c, docs/verification.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gates/roles.h"
#include "util/xalloc.h"

/* A plan of one gate running command. */
static const char *role(const char *command, const char *path, int added)
{
    struct gate_spec g = {.name = "tests", .type = "test", .command = (char *)command,
                          .must_pass = 1};
    struct gate_plan plan = {.gates = &g, .n = command ? 1 : 0};

    return gates_role_name(gates_path_role(&plan, path, added));
}

static void test_runners(void **state)
{
    struct gate_spec g[] = {{.command = "PYTHONPATH=src python3 -m pytest -q"},
                            {.command = "cd build && ctest --output-on-failure"},
                            {.command = "go test ./..."}};
    struct gate_plan plan = {.gates = g, .n = 3};

    (void)state;
    assert_int_equal(gates_runners(&plan), RUNNER_PYTEST | RUNNER_CTEST | RUNNER_GO);
    g[0].command = "python3 -m unittest discover -s tests";
    plan.n = 1;
    assert_int_equal(gates_runners(&plan), RUNNER_UNITTEST);
    g[0].command = "npm test";
    assert_int_equal(gates_runners(&plan), RUNNER_NODE);
    g[0].command = "make check";
    assert_int_equal(gates_runners(&plan), RUNNER_MAKE);
    g[0].command = "cargo test --all";
    assert_int_equal(gates_runners(&plan), RUNNER_CARGO);
    /* a word inside another is not the runner */
    g[0].command = "./run_pytestish.sh && remake";
    assert_int_equal(gates_runners(&plan), 0);
    assert_int_equal(gates_runners(NULL), 0);
}

static void test_python(void **state)
{
    const char *py = "python3 -m pytest";

    (void)state;
    assert_string_equal(role(py, "tests/test_calc.py", 0), "test");
    assert_string_equal(role(py, "tests/helpers.py", 1), "test");
    assert_string_equal(role(py, "src/pkg/test_unit.py", 0), "test");
    assert_string_equal(role(py, "src/pkg/calc_test.py", 1), "test");
    assert_string_equal(role(py, "conftest.py", 1), "test_support");
    assert_string_equal(role(py, "src/pkg/conftest.py", 0), "test_support");
    assert_string_equal(role(py, "pytest.ini", 0), "test_config");
    assert_string_equal(role(py, ".pytest.ini", 1), "test_config");
    assert_string_equal(role(py, "pyproject.toml", 0), "test_config");
    assert_string_equal(role(py, "setup.cfg", 0), "test_config");
    assert_string_equal(role(py, "tox.ini", 0), "test_config");
    assert_string_equal(role(py, "src/pkg/calc.py", 0), "product");
    assert_string_equal(role(py, "src/pkg/calc.py", 1), "product");
    assert_string_equal(role(py, "CHANGELOG.rst", 0), "product");
    /* added files that would load before the runner or a standard module */
    assert_string_equal(role(py, "pytest.py", 1), "shadow");
    assert_string_equal(role(py, "src/_pytest/__init__.py", 1), "shadow");
    assert_string_equal(role(py, "os.py", 1), "shadow");
    assert_string_equal(role(py, "src/json.py", 1), "shadow");
    assert_string_equal(role(py, "unittest/__init__.py", 1), "shadow");
    assert_string_equal(role(py, "evil.pth", 1), "shadow");
    assert_string_equal(role(py, "src/pkg/zz.pth", 1), "shadow");
    assert_string_equal(role(py, "sitecustomize.py", 1), "shadow");
    assert_string_equal(role(py, "lib/usercustomize.py", 1), "shadow");
    /* a submodule of the product's package is not a shadow */
    assert_string_equal(role(py, "src/pkg/json.py", 1), "product");
    assert_string_equal(role(py, "pkg/types.py", 1), "product");
}

static void test_python_unittest(void **state)
{
    const char *ut = "python3 -m unittest";

    (void)state;
    assert_string_equal(role(ut, "testcalc.py", 0), "test");
    assert_string_equal(role(ut, "tests.py", 1), "test");
    assert_string_equal(role(ut, "unittest.py", 1), "shadow");
    /* an existing file of the repository is never a shadow */
    assert_string_equal(role(ut, "unittest.py", 0), "product");
}

static void test_other_runners(void **state)
{
    (void)state;
    assert_string_equal(role("go test ./...", "calc/calc_test.go", 0), "test");
    assert_string_equal(role("go test ./...", "calc/testdata/in.txt", 1), "test_support");
    assert_string_equal(role("go test ./...", "go.mod", 0), "product");
    assert_string_equal(role("cargo test", "tests/it.rs", 0), "test");
    assert_string_equal(role("cargo test", "benches/b.rs", 0), "test");
    assert_string_equal(role("cargo test", ".cargo/config.toml", 0), "test_config");
    assert_string_equal(role("cargo test", "Cargo.toml", 0), "product");
    assert_string_equal(role("cargo test", "src/lib.rs", 0), "product");
    assert_string_equal(role("npm test", "package.json", 0), "test_config");
    assert_string_equal(role("npm test", "jest.config.js", 1), "test_config");
    assert_string_equal(role("npm test", ".mocharc.yml", 1), "test_config");
    assert_string_equal(role("npm test", "src/calc.test.ts", 0), "test");
    assert_string_equal(role("npm test", "src/__tests__/calc.js", 0), "test");
    assert_string_equal(role("npm test", "src/__mocks__/fs.js", 1), "test_support");
    assert_string_equal(role("npm test", "node_modules/jest/index.js", 1), "shadow");
    assert_string_equal(role("npm test", "src/calc.js", 0), "product");
    assert_string_equal(role("make check", "Makefile", 0), "test_config");
    assert_string_equal(role("make check", "rules.mk", 0), "test_config");
    assert_string_equal(role("make check", "src/add.c", 1), "product");
    assert_string_equal(role("ctest --test-dir build", "tests/CMakeLists.txt", 0),
                        "test_config");
    /* any CMake file may swap what a ctest test runs */
    assert_string_equal(role("ctest --test-dir build", "CMakeLists.txt", 0), "test_config");
    assert_string_equal(role("ctest --test-dir build", "cmake/deps.cmake", 1), "test_config");
    assert_string_equal(role("make check", "CMakeLists.txt", 0), "product");
    assert_string_equal(role("ctest --test-dir build", "CTestCustom.cmake", 1), "test_config");
    assert_string_equal(role("ctest --test-dir build", "tests/unity/unity.c", 0), "test");
    assert_string_equal(role("ctest --test-dir build", "cJSON.c", 0), "product");
}

static void test_generic(void **state)
{
    (void)state;
    /* a file a gate command names decides what runs */
    assert_string_equal(role("sh test.sh", "test.sh", 0), "test_config");
    assert_string_equal(role("bash scripts/check", "scripts/check/run.sh", 0), "test_config");
    /* one the item added is what the gate looks for */
    assert_string_equal(role("test -f notes.txt", "notes.txt", 1), "product");
    assert_string_equal(role("test -f notes.txt", "notes.txt", 0), "test_config");
    /* a test folder a command names holds tests */
    assert_string_equal(role("python3 -m pytest tests", "tests/test_more.py", 1), "test");
    assert_string_equal(role("./run-tests", "run-tests", 0), "test_config");
    /* CI, whatever the runner */
    assert_string_equal(role("sh test.sh", ".github/workflows/ci.yml", 0), "test_config");
    assert_string_equal(role(NULL, ".gitlab-ci.yml", 0), "test_config");
    assert_string_equal(role(NULL, "spec/calc_spec.rb", 0), "test");
    assert_string_equal(role(NULL, "src/CalcTest.java", 0), "test");
    assert_string_equal(role(NULL, "src/CalcTests.java", 0), "test");
    assert_string_equal(role(NULL, "src/Calc.java", 0), "product");
    assert_string_equal(role(NULL, "README.md", 1), "product");
    /* without a Python runner, an added os.py is the product's */
    assert_string_equal(role("sh test.sh", "os.py", 1), "product");
    /* a folder named like a test folder only as a part of a name */
    assert_string_equal(role(NULL, "contest/entry.c", 0), "product");
    assert_string_equal(role(NULL, "latest/x.c", 0), "product");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runners),       cmocka_unit_test(test_python),
        cmocka_unit_test(test_python_unittest), cmocka_unit_test(test_other_runners),
        cmocka_unit_test(test_generic),
    };
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
