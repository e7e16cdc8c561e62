#include "store/breaker.h"

#include <stdio.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"

int store_breaker_not_closed_each(store *st,
                                  int (*fn)(const struct store_breaker_state *b, void *ctx),
                                  void *ctx)
{
    struct store_breaker_state row;
    struct store_iter it;
    int rc;
    static const struct store_field cols[] = {
        STORE_FIELD(struct store_breaker_state, error_class, RAW, 0),
        STORE_FIELD(struct store_breaker_state, state, RAW, 1),
        STORE_FIELD(struct store_breaker_state, failures, INT, 2),
    };

    store_iter_begin(&it, st, NULL,
                     "SELECT error_class, state, failures FROM breakers WHERE state <>"
                     " 'closed' ORDER BY error_class",
                     NULL, 0);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

/* store_row_fn: a row of store_breaker_list_not_closed() into
 * (struct store_breaker *)ctx. */
static void breaker_fill(store_stmt *s, void *ctx)
{
    struct store_breaker *b = ctx;

    store_col_copy(b->error_class, sizeof(b->error_class), s, 0);
    store_col_copy(b->state, sizeof(b->state), s, 1);
    b->failures = store_col_int(s, 2);
    b->opened_at = store_col_i64(s, 3);
    b->has_probe = !store_col_null(s, 4);
    store_col_copy(b->probe_status, sizeof(b->probe_status), s, 5);
    store_col_copy(b->config_fp, sizeof(b->config_fp), s, 6);
}

int store_breaker_list_not_closed(store *st, struct store_breaker *rows, int max, int *n)
{
    static const char sel[] =
        "SELECT error_class, state, failures, opened_at, probe_run_id,"
        " (SELECT status FROM runs WHERE id = breakers.probe_run_id), config_fp FROM breakers"
        " WHERE state <> 'closed' ORDER BY error_class";

    return store_rows_fill(st, rows, max, n, STORE_ROW_SHAPE(*rows, breaker_fill), sel, NULL, 0);
}

int store_breaker_set_probe(store *st, const char *cls, const char *probe_run_id, int64_t now_ms)
{
    static const char upd[] = "UPDATE breakers SET state = ?, probe_run_id = ?, updated_at = ?"
                              " WHERE error_class = ?";
    return store_exec_args(st, "breaker", NULL, upd,
                           STORE_ARGS(STORE_TEXT("half_open"), STORE_TEXT(probe_run_id),
                                      STORE_I64(now_ms), STORE_TEXT(cls)));
}

int store_breaker_ensure(store *st, const char *cls, int64_t now_ms)
{
    static const char ins[] = "INSERT INTO breakers(error_class, state, failures,"
                              " updated_at) VALUES (?, 'closed', 0, ?) ON CONFLICT DO NOTHING";
    return store_exec_args(st, "breaker", NULL, ins,
                           STORE_ARGS(STORE_TEXT(cls), STORE_I64(now_ms)));
}

static void state_get_fill(store_stmt *s, void *ctx)
{
    struct store_breaker *b = ctx;

    store_col_copy(b->state, sizeof(b->state), s, 0);
    b->failures = store_col_int(s, 1);
    b->has_probe = !store_col_null(s, 2);
}

int store_breaker_get(store *st, const char *cls, struct store_breaker *out)
{
    static const char sel[] =
        "SELECT state, failures, probe_run_id FROM breakers WHERE error_class = ?";
    int found;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = store_get_row(st, NULL, state_get_fill, out, &found, sel, STORE_ARGS(STORE_TEXT(cls)));
    if (rc == 0 && found)
        /* truncation: ok, the row was found by this class, stored under 64 bytes */
        snprintf(out->error_class, sizeof(out->error_class), "%s", cls);
    else if (rc == 0)
        rc = err_set(ERR_NOTFOUND, "breaker %s: not found", cls);
    return rc;
}

int store_breaker_open_config(store *st, const char *cls, const char *config_fp, const char *reason,
                              int64_t now_ms)
{
    static const char upd[] = "UPDATE breakers SET state = 'open', failures = failures + 1,"
                              " opened_at = ?1, probe_run_id = NULL, config_fp = ?2, reason = ?3,"
                              " updated_at = ?1 WHERE error_class = ?4";
    return store_exec_args(
        st, "breaker", NULL, upd,
        STORE_ARGS(STORE_I64(now_ms), STORE_TEXT(config_fp), STORE_TEXT(reason), STORE_TEXT(cls)));
}

int store_breaker_close_config(store *st, const char *cls, int64_t now_ms, int *changed)
{
    static const char upd[] = "UPDATE breakers SET state = 'closed', failures = 0,"
                              " probe_run_id = NULL, config_fp = NULL, reason = NULL,"
                              " updated_at = ? WHERE error_class = ? AND config_fp IS NOT NULL";
    return store_exec_args(st, "breaker", changed, upd,
                           STORE_ARGS(STORE_I64(now_ms), STORE_TEXT(cls)));
}

int store_breaker_config_stale(store *st, const char *config_fp, char (*cls)[64], int max, int *n)
{
    static const char q[] = "SELECT error_class FROM breakers WHERE config_fp IS NOT NULL"
                            " AND config_fp <> ? AND state <> 'closed' LIMIT 16";
    return store_select_rows_copy(st, cls[0], sizeof(cls[0]), max, n, q,
                                  STORE_ARGS(STORE_TEXT(config_fp)));
}

int store_breaker_reset_failures(store *st, int64_t now_ms)
{
    static const char reset[] = "UPDATE breakers SET failures = 0, updated_at = ?"
                                " WHERE state = 'closed' AND failures > 0";
    return store_exec_args(st, "breaker", NULL, reset, STORE_ARGS(STORE_I64(now_ms)));
}

int store_breaker_probed_by(store *st, const char *run_id, char (*cls)[64], int max, int *n)
{
    static const char probes[] = "SELECT error_class, failures FROM breakers"
                                 " WHERE state = 'half_open' AND probe_run_id = ?";
    return store_select_rows_copy(st, cls[0], sizeof(cls[0]), max, n, probes,
                                  STORE_ARGS(STORE_TEXT(run_id)));
}

int store_breaker_close(store *st, const char *cls, int64_t now_ms)
{
    static const char close_[] = "UPDATE breakers SET state = 'closed', failures = 0,"
                                 " probe_run_id = NULL, updated_at = ? WHERE error_class = ?";
    return store_exec_args(st, "breaker", NULL, close_,
                           STORE_ARGS(STORE_I64(now_ms), STORE_TEXT(cls)));
}

int store_breaker_update(store *st, const char *cls, const char *state, int failures,
                         int64_t opened_at, int64_t now_ms)
{
    static const char upd[] = "UPDATE breakers SET state = ?, failures = ?, opened_at = ?,"
                              " probe_run_id = NULL, updated_at = ? WHERE error_class = ?";
    return store_exec_args(st, "breaker", NULL, upd,
                           STORE_ARGS(STORE_TEXT(state), STORE_I64(failures),
                                      opened_at >= 0 ? STORE_I64(opened_at) : STORE_NULL,
                                      STORE_I64(now_ms), STORE_TEXT(cls)));
}
