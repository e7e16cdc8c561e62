/* Unit tests: the store's row cursor (store_iter_*) on either backend, and
 * a store_*_each() built on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "store/breaker.h"
#include "store/internal.h"
#include "store/store.h"
#include "tests/unit/storehelp.h"
#include "tests/unit/testutil.h"
#include "util/err.h"

/* Five rows, 1..5, in order; both dialects. */
#define FIVE "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) "
static const char q_five[] = FIVE "SELECT n, 'row ' || n FROM t ORDER BY n";
static const char q_above[] = FIVE "SELECT n, 'row ' || n FROM t WHERE n > ?1 ORDER BY n";
/* Rows 1 and 2, then a failure computing row 3 (SQLite evaluates row by
 * row; PostgreSQL fails the whole result at the first step). */
static const char q_fails_at_3[] =
    FIVE "SELECT n, abs(CASE WHEN n = 3 THEN -9223372036854775807 - 1 ELSE n END) FROM t";
static const char q_broken[] = "SELECT n FROM no_such_table";

/* A row of the queries above; extra is named by no field (zeroed by each
 * store_iter_next()). */
struct nrow {
    int64_t n;
    const char *label;
    int extra;
};
static const struct store_field nrow_fields[] = {
    STORE_FIELD(struct nrow, n, I64, 0),
    STORE_FIELD(struct nrow, label, RAW, 1),
};

static store *open_new(const char *rel)
{
    char path[512];
    store *st = NULL;

    testutil_db(path, sizeof(path), rel);
    assert_int_equal(store_open(&st, path), 0);
    return st;
}

/* What a loop over a cursor saw. */
struct seen {
    int rows;
    int64_t last;
    char label[32];
};

/* The loop every store_*_each() runs: rows of sql (arg bound as ?1 when
 * not negative) until the stop_at'th row, which ends it with 77. */
static int each_n(store *st, struct seen *seen, const char *sql, int64_t arg, int stop_at)
{
    struct store_iter it;
    struct nrow row;
    int rc;

    memset(seen, 0, sizeof(*seen));
    memset(&row, 0x5a, sizeof(row));
    store_iter_begin(&it, st, "numbers", sql, STORE_ARGS(STORE_I64(arg)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, nrow_fields))) > 0) {
        assert_int_equal(rc, 1);
        assert_int_equal(row.extra, 0); /* zeroed, then filled */
        seen->rows++;
        seen->last = row.n;
        snprintf(seen->label, sizeof(seen->label), "%s", row.label ? row.label : "(null)");
        if (seen->rows == stop_at) {
            rc = 77;
            break;
        }
    }
    return store_iter_end(&it, rc);
}

static void test_iter_all_rows(void **state)
{
    store *st = open_new("all.db");
    struct seen s;

    (void)state;
    assert_int_equal(each_n(st, &s, q_five, -1, 0), 0);
    assert_int_equal(s.rows, 5);
    assert_int_equal(s.last, 5);
    assert_string_equal(s.label, "row 5");
    store_close(st);
}

static void test_iter_zero_rows(void **state)
{
    store *st = open_new("zero.db");
    struct seen s;

    (void)state;
    assert_int_equal(each_n(st, &s, q_above, 10, 0), 0);
    assert_int_equal(s.rows, 0);
    /* the same cached statement, bound again, answers anew */
    assert_int_equal(each_n(st, &s, q_above, 3, 0), 0);
    assert_int_equal(s.rows, 2);
    assert_int_equal(s.last, 5);
    store_close(st);
}

/* The caller's nonzero value ends the rows and is what the loop returns;
 * the statement goes back to the cache reset: the next loop starts at
 * the first row again. */
static void test_iter_early_stop(void **state)
{
    store *st = open_new("stop.db");
    struct seen s;

    (void)state;
    assert_int_equal(each_n(st, &s, q_five, -1, 2), 77);
    assert_int_equal(s.rows, 2);
    assert_int_equal(s.last, 2);
    assert_int_equal(each_n(st, &s, q_five, -1, 1), 77);
    assert_int_equal(s.last, 1);
    assert_string_equal(s.label, "row 1");
    assert_int_equal(each_n(st, &s, q_five, -1, 0), 0);
    assert_int_equal(s.rows, 5);
    store_close(st);
}

/* A step that fails is the store's error with the loop's what, never a
 * quiet end; the rows before it were handed over. */
static void test_iter_error_mid_way(void **state)
{
    store *st = open_new("fail.db");
    struct seen s;
    int rc;

    (void)state;
    err_clear();
    rc = each_n(st, &s, q_fails_at_3, -1, 0);
    assert_true(rc < 0);
    assert_int_equal(rc, err_last_code());
    assert_true(strncmp(err_last(), "numbers: ", 9) == 0);
    assert_int_equal(s.rows, store_dialect_of(st) == STORE_SQLITE ? 2 : 0);
    /* the connection is fine afterwards */
    assert_int_equal(each_n(st, &s, q_five, -1, 0), 0);
    assert_int_equal(s.rows, 5);
    store_close(st);
}

/* Past its end, or after a failure, a cursor stays where it is: it never
 * starts its query over (SQLite's step would). */
static void test_iter_stays_ended(void **state)
{
    store *st = open_new("ended.db");
    struct store_iter it;
    struct nrow row;
    int n = 0, rc;

    (void)state;
    store_iter_begin(&it, st, "numbers", q_five, NULL, 0);
    while (store_iter_next(&it, STORE_INTO(&row, nrow_fields)) > 0)
        n++;
    assert_int_equal(n, 5);
    assert_int_equal(store_iter_next(&it, STORE_INTO(&row, nrow_fields)), 0);
    assert_int_equal(store_iter_next(&it, NULL), 0);
    assert_int_equal(store_iter_end(&it, 0), 0);

    store_iter_begin(&it, st, "numbers", q_fails_at_3, NULL, 0);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, nrow_fields))) > 0)
        ;
    assert_true(rc < 0);
    assert_int_equal(store_iter_next(&it, STORE_INTO(&row, nrow_fields)), rc);
    assert_int_equal(store_iter_end(&it, rc), rc);
    store_close(st);
}

/* A statement that does not prepare: the first next returns its error,
 * with no row; end accepts the cursor as it is. */
static void test_iter_prepare_error(void **state)
{
    store *st = open_new("broken.db");
    struct seen s;
    int rc;

    (void)state;
    rc = each_n(st, &s, q_broken, -1, 0);
    assert_true(rc < 0);
    assert_int_equal(s.rows, 0);
    assert_non_null(strstr(err_last(), "no_such_table"));
    store_close(st);
}

struct breakers_seen {
    int rows, stop_at;
    char classes[128];
};

static int breaker_seen(const struct store_breaker_state *b, void *ctx)
{
    struct breakers_seen *bs = ctx;
    size_t used = strlen(bs->classes);

    snprintf(bs->classes + used, sizeof(bs->classes) - used, "%s%s/%s/%d", used ? " " : "",
             b->error_class, b->state, b->failures);
    return ++bs->rows == bs->stop_at ? 5 : 0;
}

/* A store_*_each() on the cursor: typed rows in order, an early stop
 * returned as the callback's value, no rows at all. */
static void test_each_on_iter(void **state)
{
    store *st = open_new("breakers.db");
    struct breakers_seen bs;

    (void)state;
    memset(&bs, 0, sizeof(bs));
    assert_int_equal(store_breaker_not_closed_each(st, breaker_seen, &bs), 0);
    assert_int_equal(bs.rows, 0);
    store_test_exec(st,
                    "INSERT INTO breakers (error_class, state, failures, updated_at) VALUES"
                    " ('b', 'open', 3, 1), ('a', 'half_open', 1, 1), ('c', 'closed', 0, 1),"
                    " ('d', 'open', 9, 1)",
                    NULL, 0);
    assert_int_equal(store_breaker_not_closed_each(st, breaker_seen, &bs), 0);
    assert_string_equal(bs.classes, "a/half_open/1 b/open/3 d/open/9");
    memset(&bs, 0, sizeof(bs));
    bs.stop_at = 2;
    assert_int_equal(store_breaker_not_closed_each(st, breaker_seen, &bs), 5);
    assert_string_equal(bs.classes, "a/half_open/1 b/open/3");
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iter_all_rows),    cmocka_unit_test(test_iter_zero_rows),
        cmocka_unit_test(test_iter_early_stop),  cmocka_unit_test(test_iter_error_mid_way),
        cmocka_unit_test(test_iter_stays_ended), cmocka_unit_test(test_iter_prepare_error),
        cmocka_unit_test(test_each_on_iter),
    };
    testutil_setup("store_iter");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
