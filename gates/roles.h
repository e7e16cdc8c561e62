/*
 * roles.h - what a path of the repository is to the test runners a
 * verification plan uses: a test, what tests lean on, what decides which
 * tests run, a file that would load in place of the runner or a standard
 * module, or the product.
 *
 * The rules are fixed per runner and documented in docs/verification.md
 * ("Test, config and product"); they never come from the model.  They
 * decide the trees an item's gates are judged on: the item's product
 * changes alone under the baseline's tests (the original tests judge the
 * product), and the item's tests alone over the baseline's product (new
 * tests must fail there).  Pure functions: no file is read.
 */
#ifndef GOALD_GATES_ROLES_H
#define GOALD_GATES_ROLES_H

#include "gates/gates.h"

/* The runners goald knows, as bits: read from the gate commands. */
enum gate_runner {
    RUNNER_PYTEST = 1 << 0,   /* pytest, py.test, python -m pytest, tox */
    RUNNER_UNITTEST = 1 << 1, /* python -m unittest */
    RUNNER_GO = 1 << 2,       /* go test */
    RUNNER_CARGO = 1 << 3,    /* cargo test, cargo nextest */
    RUNNER_CTEST = 1 << 4,    /* ctest, cmake --build ... --target test */
    RUNNER_MAKE = 1 << 5,     /* make */
    RUNNER_NODE = 1 << 6,     /* npm, yarn, pnpm, node --test, jest, mocha, vitest */
};

enum path_role {
    ROLE_PRODUCT = 0,  /* everything else: the product */
    ROLE_TEST,         /* a test file, by the runners' naming rules or a test folder */
    ROLE_TEST_SUPPORT, /* what tests lean on: conftest.py, fixtures, testdata, mocks */
    ROLE_TEST_CONFIG,  /* what decides which tests run and how: runner config, CI */
    ROLE_SHADOW,       /* a new file that would load in place of (or before) the runner
                          or a standard module: *.pth, sitecustomize, pytest.py, os.py,
                          node_modules/ */
};

/* The runners named by the plan's gate commands (bits of enum
 * gate_runner; 0 when none is known: the generic rules alone apply). */
unsigned gates_runners(const struct gate_plan *plan);

/* The role of path (relative, '/'-separated) for the runners of plan
 * (may be NULL: the generic rules alone), a file one of its commands
 * names being test configuration.  added: the item added it (only an
 * added file can be ROLE_SHADOW: one that was there at the baseline is
 * the repository's own). */
enum path_role gates_path_role(const struct gate_plan *plan, const char *path, int added);

/* "product", "test", "test_support", "test_config", "shadow". */
const char *gates_role_name(enum path_role r);

#endif
