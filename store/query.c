/*
 * query.c - the statement shapes every store/<entity>.c shares: bind a
 * list of values, step to DONE, copy a column, read one number.  Nothing
 * here owns memory beyond the call; statements stay in the cache of
 * store_prepare() (store.c).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "store/store.h"
#include "util/err.h"
#include "util/xalloc.h"

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
    /* truncation: ok, fields are sized for what goald writes to them; text shown may be cut */
    snprintf(out, n, "%s", store_col_text(s, i));
}

int store_rows_copy(store *st, char *rows, size_t width, int max, int *n, store_stmt *s)
{
    int rc = 0;

    *n = 0;
    while (*n < max && store_next_row(st, s, "rows", &rc)) {
        store_col_copy(rows + (size_t)*n * width, width, s, 0);
        (*n)++;
    }
    store_done(s);
    return rc;
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
    default: /* a failed read is never "no row" */
        rc = store_err(st, what ? what : "read");
    }
    store_done(s);
    return rc;
}

int store_get_one(store *st, const char *what, store_row_fn *fill, void *ctx, const char *sql,
                  const struct store_arg *args, int n)
{
    int found;
    int rc = store_get_row(st, what, fill, ctx, &found, sql, args, n);

    return rc == 0 && !found ? ERR_NOTFOUND : rc;
}

void store_iter_begin(struct store_iter *it, store *st, const char *what, const char *sql,
                      const struct store_arg *args, int nargs)
{
    it->st = st;
    it->s = NULL;
    it->what = what ? what : "read";
    it->done = 0;
    if ((it->rc = store_prepare_args(st, &it->s, sql, args, nargs)) != 0) {
        it->s = NULL;
        it->done = 1;
    }
}

int store_iter_next(struct store_iter *it, const struct store_fields_into *into)
{
    int step;

    if (it->done)
        return it->rc;
    step = store_step(it->s);
    if (step != STORE_ROW) {
        it->done = 1;
        if (step != STORE_DONE) /* a failed read never ends the rows quietly */
            it->rc = store_err(it->st, it->what);
        return it->rc;
    }
    if (into) {
        memset(into->row, 0, into->size);
        store_fields_fill(into->row, it->s, into->fields, into->n, 0);
    }
    return 1;
}

int store_iter_end(struct store_iter *it, int rc)
{
    store_done(it->s);
    it->s = NULL;
    it->done = 1;
    return rc;
}

int store_each_row(store *st, const char *what, store_each_fn *fn, void *ctx, const char *sql,
                   const struct store_arg *args, int n)
{
    struct store_iter it;
    int rc;

    store_iter_begin(&it, st, what, sql, args, n);
    while ((rc = store_iter_next(&it, NULL)) > 0)
        if ((rc = fn(it.s, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_get_by_id(store *st, const char *what, store_row_fn *fill, void *ctx, const char *sql,
                    const char *id)
{
    int found;
    int rc = store_get_row(st, what, fill, ctx, &found, sql, STORE_ARGS(STORE_TEXT(id)));

    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "%s %s: not found", what, id);
    return rc;
}

/* Copy the n bytes at v into a row's member at (STORE_FIELD checked at
 * compile time that the member is n bytes: the kind names its type). */
static void field_put(char *at, const void *v, size_t n)
{
    memcpy(at, v, n);
}

/* 1 when f is of an OPT_ kind and its column is NULL: the member is -1. */
static int field_none(store_stmt *s, const struct store_field *f)
{
    return (f->kind == STORE_FIELD_OPT_INT || f->kind == STORE_FIELD_OPT_I64 ||
            f->kind == STORE_FIELD_OPT_DOUBLE) &&
           store_col_null(s, f->col);
}

/* An integer column (or, for SET, whether it is set) into the member at,
 * as the C type of f->kind. */
static void field_integer(char *at, store_stmt *s, const struct store_field *f)
{
    int64_t v = f->kind == STORE_FIELD_SET ? !store_col_null(s, f->col)
                : field_none(s, f)         ? -1
                                           : store_col_i64(s, f->col);
    int i = (int)v;
    long l = (long)v;

    switch (f->kind) {
    case STORE_FIELD_LONG:
        field_put(at, &l, sizeof(l));
        break;
    case STORE_FIELD_I64:
    case STORE_FIELD_OPT_I64:
        field_put(at, &v, sizeof(v));
        break;
    default: /* INT, OPT_INT, SET */
        field_put(at, &i, sizeof(i));
    }
}

/* Column f->col into the member at, by f->kind. */
static void field_fill(char *at, store_stmt *s, const struct store_field *f, int copy)
{
    const char *t;
    double d;

    switch (f->kind) {
    case STORE_FIELD_RAW:
        t = copy ? store_col_strdup(s, f->col) : store_col_raw(s, f->col);
        field_put(at, &t, sizeof(t));
        break;
    case STORE_FIELD_COPY:
        store_col_copy(at, f->size, s, f->col);
        break;
    case STORE_FIELD_DOUBLE:
    case STORE_FIELD_OPT_DOUBLE:
        d = field_none(s, f) ? -1.0 : store_col_double(s, f->col);
        field_put(at, &d, sizeof(d));
        break;
    default:
        field_integer(at, s, f);
    }
}

void store_fields_fill(void *row, store_stmt *s, const struct store_field *fields, int n, int copy)
{
    for (int i = 0; i < n; i++)
        field_fill((char *)row + fields[i].off, s, &fields[i], copy);
}

void *store_fields_dup(store_stmt *s, size_t size, const struct store_field *fields, int n)
{
    void *row = xmalloc(size);

    memset(row, 0, size);
    store_fields_fill(row, s, fields, n, 1);
    return row;
}

void store_fields_free(void *row, const struct store_field *fields, int n)
{
    for (int i = 0; i < n; i++) {
        char *t;

        if (fields[i].kind != STORE_FIELD_RAW)
            continue;
        memcpy(&t, (char *)row + fields[i].off, sizeof(t));
        free(t);
    }
}

void store_fields_row(store_stmt *s, void *ctx)
{
    const struct store_fields_into *into = ctx;

    store_fields_fill(into->row, s, into->fields, into->n, 0);
}

int store_get_fields(store *st, const char *what, const struct store_fields_into *into, int *found,
                     const char *sql, const struct store_arg *args, int nargs)
{
    memset(into->row, 0, into->size);
    return store_get_row(st, what, store_fields_row, (void *)into, found, sql, args, nargs);
}

/* The array store_rows_fill() and store_rows_alloc() fill: its elements,
 * their size, how many are used and how many fit. */
struct row_array {
    char *rows;
    size_t size, n, cap;
    store_row_fn *fill;
};

static void *row_array_next(struct row_array *a)
{
    char *row = a->rows + a->n++ * a->size;

    memset(row, 0, a->size);
    return row;
}

static int fill_fixed(store_stmt *s, void *ctx)
{
    struct row_array *a = ctx;

    if (a->n == a->cap)
        return 1;
    a->fill(s, row_array_next(a));
    return 0;
}

int store_rows_fill(store *st, void *rows, int max, int *n, const struct store_row_shape *shape,
                    const char *sql, const struct store_arg *args, int nargs)
{
    struct row_array a = {rows, shape->size, 0, max > 0 ? (size_t)max : 0, shape->fill};
    int rc = store_each_row(st, NULL, fill_fixed, &a, sql, args, nargs);

    *n = (int)a.n;
    return rc < 0 ? rc : 0;
}

static int fill_grown(store_stmt *s, void *ctx)
{
    struct row_array *a = ctx;

    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->rows = xrealloc(a->rows, a->cap * a->size);
    }
    a->fill(s, row_array_next(a));
    return 0;
}

int store_rows_alloc(store *st, const char *what, void **out, size_t *n,
                     const struct store_row_shape *shape, const char *sql,
                     const struct store_arg *args, int nargs)
{
    struct row_array a = {NULL, shape->size, 0, 0, shape->fill};
    int rc = store_each_row(st, what, fill_grown, &a, sql, args, nargs);

    *out = NULL;
    *n = 0;
    if (rc) {
        free(a.rows);
        return rc;
    }
    *out = a.rows;
    *n = a.n;
    return 0;
}

/* store_row_fn: column 0 into an id ((char *)ctx, 37 bytes). */
static void id_fill(store_stmt *s, void *ctx)
{
    snprintf(ctx, 37, "%.36s", store_col_text(s, 0)); /* truncation: ok, at most 36 bytes */
}

int store_ids_args(store *st, const char *what, char (**out)[37], size_t *n, const char *sql,
                   const struct store_arg *args, int nargs)
{
    void *ids;
    int rc = store_rows_alloc(st, what, &ids, n, STORE_ROW_SHAPE(**out, id_fill), sql, args, nargs);

    *out = ids;
    return rc;
}

cJSON *store_json_object(store_stmt *s, const struct store_json_col *cols, int ncols)
{
    cJSON *o = cJSON_CreateObject();

    for (int i = 0; i < ncols; i++) {
        const struct store_json_col *c = &cols[i];
        if (c->kind == STORE_JSON_INT)
            cJSON_AddNumberToObject(o, c->key, store_col_int(s, c->col));
        else if (c->if_null && store_col_null(s, c->col))
            cJSON_AddStringToObject(o, c->key, c->if_null);
        else
            cJSON_AddStringToObject(o, c->key, store_col_text(s, c->col));
    }
    return o;
}

struct json_rows {
    cJSON *arr;
    const struct store_json_col *cols;
    int ncols;
};

static int json_row(store_stmt *s, void *ctx)
{
    const struct json_rows *j = ctx;

    cJSON_AddItemToArray(j->arr, store_json_object(s, j->cols, j->ncols));
    return 0;
}

int store_json_rows(store *st, cJSON *arr, const struct store_json_col *cols, int ncols,
                    const char *sql, const struct store_arg *args, int nargs)
{
    struct json_rows j = {arr, cols, ncols};

    return store_each_row(st, NULL, json_row, &j, sql, args, nargs);
}

struct store_arg store_arg_opt_i64(int64_t v)
{
    return v < 0 ? STORE_NULL : STORE_I64(v);
}

struct store_arg store_arg_opt_double(double v)
{
    return v < 0 ? STORE_NULL : STORE_DOUBLE(v);
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

static void fill_strdup(store_stmt *s, void *ctx)
{
    *(char **)ctx = store_col_strdup(s, 0);
}

int store_get_strdup(store *st, const char *what, char **out, int *found, const char *sql,
                     const struct store_arg *args, int n)
{
    *out = NULL;
    return store_get_row(st, what, fill_strdup, out, found, sql, args, n);
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
    int found;
    int rc = store_get_row(st, what, fill_int64, out, &found, sql, args, n);

    return rc == 0 && !found ? store_err(st, what) : rc;
}

int store_peek_text(store *st, char *out, size_t n, const char *sql, const struct store_arg *args,
                    int nargs)
{
    int found;

    return store_get_text(st, NULL, out, n, &found, sql, args, nargs);
}

int store_select_rows_copy(store *st, char *rows, size_t width, int max, int *n, const char *sql,
                           const struct store_arg *args, int nargs)
{
    store_stmt *s;
    int rc;

    *n = 0;
    if ((rc = store_prepare_args(st, &s, sql, args, nargs)) != 0)
        return rc;
    return store_rows_copy(st, rows, width, max, n, s);
}
