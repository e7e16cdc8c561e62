/*
 * testutil.h - helpers shared by the cmocka unit tests (header-only so that
 * each test program stays one file).
 */
#ifndef GOALD_TESTS_TESTUTIL_H
#define GOALD_TESTS_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fsutil.h"

static char testutil_dir[512];

/* A fresh folder for this test program under $GOALD_TEST_TMP (or /tmp). */
static inline void testutil_setup(const char *name)
{
    const char *base = getenv("GOALD_TEST_TMP");

    snprintf(testutil_dir, sizeof(testutil_dir), "%s/%s-%ld", base && *base ? base : "/tmp",
             name, (long)getpid());
    fs_remove_tree(testutil_dir);
    if (fs_mkdir_p(testutil_dir, 0700) != 0) {
        fprintf(stderr, "cannot create %s\n", testutil_dir);
        exit(1);
    }
}

static inline void testutil_tmp_path(char *out, size_t n, const char *rel)
{
    int w = snprintf(out, n, "%s/%s", testutil_dir, rel);

    if (w < 0 || (size_t)w >= n) {
        fprintf(stderr, "test path too long: %s/%s\n", testutil_dir, rel);
        exit(1);
    }
}

#endif
