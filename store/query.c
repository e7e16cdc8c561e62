/*
 * query.c - the statement shapes every store/<entity>.c shares: bind a
 * list of values, step to DONE, copy a column, read one number.  Nothing
 * here owns memory beyond the call; statements stay in the cache of
 * store_prepare() (store.c).
 */
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

void store_bind_args(store_stmt *s, const struct store_arg *args, int n)
{
    for (int i = 0; i < n; i++) {
        switch (args[i].type) {
        case STORE_ARG_TEXT:
            store_bind_text(s, i + 1, args[i].text);
            break;
        case STORE_ARG_I64:
            store_bind_i64(s, i + 1, args[i].i64);
            break;
        case STORE_ARG_DOUBLE:
            store_bind_double(s, i + 1, args[i].d);
            break;
        case STORE_ARG_NULL:
            store_bind_null(s, i + 1);
            break;
        }
    }
}

int store_prepare_args(store *st, store_stmt **out, const char *sql, const struct store_arg *args,
                       int n)
{
    int rc = store_prepare(st, out, sql);

    if (rc == 0)
        store_bind_args(*out, args, n);
    return rc;
}

int store_next_row(store *st, store_stmt *s, const char *what, int *rc)
{
    int step = store_step(s);

    if (step == STORE_ROW)
        return 1;
    if (step != STORE_DONE)
        *rc = store_err(st, what);
    return 0;
}

int store_step_done(store *st, store_stmt *s, const char *what)
{
    int rc = store_step(s) == STORE_DONE ? 0 : store_err(st, what);

    store_done(s);
    return rc;
}

/* An INSERT ... RETURNING answers its one row. */
static int store_exec_is_insert(const char *sql)
{
    return strstr(sql, "RETURNING") != NULL;
}

/* Prepare sql, bind args, step to DONE: *changed (when not NULL) gets
 * store_changes() after the step.  With id_out, sql ends in RETURNING
 * (both dialects) and *id_out gets the new row's id from its one row. */
static int exec_step(store *st, const char *what, const char *sql, const struct store_arg *args,
                     int n, int *changed, int64_t *id_out)
{
    store_stmt *s;
    int rc, step;

    if (changed)
        *changed = 0;
    if ((rc = store_prepare_args(st, &s, sql, args, n)) != 0)
        return rc;
    step = store_step(s);
    if (step == STORE_ROW && store_exec_is_insert(sql)) {
        if (id_out)
            *id_out = store_col_i64(s, 0);
        step = store_step(s);
    }
    rc = step == STORE_DONE ? 0 : store_err(st, what);
    if (changed)
        *changed = store_changes(s);
    store_done(s);
    return rc;
}

int store_exec_args(store *st, const char *what, int *changed, const char *sql,
                    const struct store_arg *args, int n)
{
    return exec_step(st, what, sql, args, n, changed, NULL);
}

int store_exec_insert(store *st, const char *what, int64_t *id_out, const char *sql,
                      const struct store_arg *args, int n)
{
    return exec_step(st, what, sql, args, n, NULL, id_out);
}

int store_exec_id(store *st, const char *sql, const char *id, const char *what)
{
    return store_exec_args(st, what, NULL, sql, STORE_ARGS(STORE_TEXT(id)));
}

const char *store_col_text(store_stmt *s, int i)
{
    const char *t = store_col_raw(s, i);

    return t ? t : "";
}

void store_col_copy(char *out, size_t n, store_stmt *s, int i)
{
    snprintf(out, n, "%s", store_col_text(s, i));
}

void store_rows_copy(char *rows, size_t width, int max, int *n, store_stmt *s)
{
    *n = 0;
    while (*n < max && store_step(s) == STORE_ROW) {
        store_col_copy(rows + (size_t)*n * width, width, s, 0);
        (*n)++;
    }
    store_done(s);
}

int store_get_row(store *st, const char *what, store_row_fn *fill, void *ctx, int *found,
                  const char *sql, const struct store_arg *args, int n)
{
    store_stmt *s;
    int rc;

    *found = 0;
    if ((rc = store_prepare_args(st, &s, sql, args, n)) != 0)
        return rc;
    switch (store_step(s)) {
    case STORE_ROW:
        *found = 1;
        fill(s, ctx);
        break;
    case STORE_DONE:
        break;
    default:
        rc = store_err(st, what);
    }
    store_done(s);
    return rc;
}

static void fill_int64(store_stmt *s, void *ctx)
{
    *(int64_t *)ctx = store_col_i64(s, 0);
}

int store_get_int64(store *st, const char *what, int64_t *out, int *found, const char *sql,
                    const struct store_arg *args, int n)
{
    return store_get_row(st, what, fill_int64, out, found, sql, args, n);
}

struct text_cols {
    const struct store_text_col *cols;
    int n;
};

static void fill_texts(store_stmt *s, void *ctx)
{
    const struct text_cols *t = ctx;

    for (int i = 0; i < t->n; i++)
        store_col_copy(t->cols[i].out, t->cols[i].n, s, i);
}

int store_get_texts(store *st, const char *what, const struct store_text_col *cols, int ncols,
                    int *found, const char *sql, const struct store_arg *args, int nargs)
{
    struct text_cols t = {cols, ncols};

    for (int i = 0; i < ncols; i++)
        cols[i].out[0] = '\0';
    return store_get_row(st, what, fill_texts, &t, found, sql, args, nargs);
}

int store_get_text(store *st, const char *what, char *out, size_t n, int *found, const char *sql,
                   const struct store_arg *args, int nargs)
{
    const struct store_text_col col = {out, n};

    return store_get_texts(st, what, &col, 1, found, sql, args, nargs);
}

int store_status_set(store *st, const char *sql, const char *id, const char *from, const char *to,
                     int terminal, int64_t now_ms, int *changed)
{
    int n = 0;
    int rc = store_exec_args(st, "status", &n, sql,
                             STORE_ARGS(STORE_TEXT(to), STORE_I64(now_ms), STORE_I64(terminal),
                                        STORE_TEXT(id), STORE_TEXT(from)));

    *changed = rc == 0 && n == 1;
    return rc;
}

int store_count(store *st, const char *what, int64_t *out, const char *sql,
                const struct store_arg *args, int n)
{
    store_stmt *s;
    int rc;

    if ((rc = store_prepare_args(st, &s, sql, args, n)) != 0)
        return rc;
    if (store_step(s) == STORE_ROW)
        *out = store_col_i64(s, 0);
    else
        rc = store_err(st, what);
    store_done(s);
    return rc;
}

int store_peek_text(store *st, char *out, size_t n, const char *sql, const struct store_arg *args,
                    int nargs)
{
    store_stmt *s;
    int rc;

    out[0] = '\0';
    if ((rc = store_prepare_args(st, &s, sql, args, nargs)) != 0)
        return rc;
    if (store_step(s) == STORE_ROW)
        store_col_copy(out, n, s, 0);
    store_done(s);
    return 0;
}

int store_select_rows_copy(store *st, char *rows, size_t width, int max, int *n, const char *sql,
                           const struct store_arg *args, int nargs)
{
    store_stmt *s;
    int rc;

    *n = 0;
    if ((rc = store_prepare_args(st, &s, sql, args, nargs)) != 0)
        return rc;
    store_rows_copy(rows, width, max, n, s);
    return 0;
}
