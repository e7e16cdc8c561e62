/*
 * storehelp.h - helpers for the unit tests that write rows the typed store
 * API has no function for (a run in a given status, an item moved by hand).
 * Header-only, like testutil.h; include it after <cmocka.h>.
 */
#ifndef GOALD_TESTS_STOREHELP_H
#define GOALD_TESTS_STOREHELP_H

#include "store/internal.h"

/* Run sql on st with args bound as ?1..?n, outside the statement cache
 * (sql need not outlive it); the test fails unless it steps to its end. */
static inline void store_test_exec(store *st, const char *sql, const struct store_arg *args, int n)
{
    store_stmt *s;

    assert_int_equal(store_prepare_uncached(st, &s, sql), 0);
    store_bind_args(s, args, n);
    assert_int_equal(store_step(s), STORE_DONE);
    store_finalize(s);
}

#endif
