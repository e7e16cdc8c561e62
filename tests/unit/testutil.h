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

#include <libpq-fe.h>

#include "util/fsutil.h"
#include "util/xalloc.h"

static char testutil_dir[512];

/* A fresh folder for this test program under $GOALD_TEST_TMP (or /tmp);
 * and cJSON allocating as in the goald binary (xalloc_cjson_hooks()):
 * main() calls it before any test. */
static inline void testutil_setup(const char *name)
{
    const char *base = getenv("GOALD_TEST_TMP");

    xalloc_cjson_hooks();

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

/* The PostgreSQL database the store tests run on: GOALD_TEST_PG, a URL or
 * @FILE naming a file that holds one (the pg fixture's); NULL: SQLite. */
static inline const char *testutil_pg_url(void)
{
    static char url[1024];
    const char *v = getenv("GOALD_TEST_PG");
    FILE *f;

    if (!v || !*v)
        return NULL;
    if (v[0] != '@')
        return v;
    if (!url[0]) {
        if (!(f = fopen(v + 1, "r")) || !fgets(url, sizeof(url), f)) {
            fprintf(stderr, "GOALD_TEST_PG: cannot read a URL from %s\n", v + 1);
            exit(1);
        }
        fclose(f);
        url[strcspn(url, "\r\n")] = '\0';
    }
    return url;
}

/* Where a test's store lives: a file rel under the test folder, or (on
 * PostgreSQL) a fresh schema of its own in the test database, named by
 * the URL's search_path, so that every test starts empty. */
static inline void testutil_db(char *out, size_t n, const char *rel)
{
    static int seq;
    const char *base = testutil_pg_url();
    char schema[64], sql[128];
    PGconn *c;
    PGresult *r;
    int w;

    if (!base) {
        testutil_tmp_path(out, n, rel);
        return;
    }
    snprintf(schema, sizeof(schema), "t%ld_%d", (long)getpid(), ++seq);
    snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", schema);
    c = PQconnectdb(base);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "%s: %s", base, PQerrorMessage(c));
        exit(1);
    }
    PQclear(r);
    PQfinish(c);
    w = snprintf(out, n, "%s%soptions=-csearch_path%%3D%s", base, strchr(base, '?') ? "&" : "?",
                 schema);
    if (w < 0 || (size_t)w >= n) {
        fprintf(stderr, "test database URL too long\n");
        exit(1);
    }
}

#endif
