/*
 * internal.h - what only store/ may use: the SQLite connection, its
 * statement cache and the bind/column helpers.  Nothing outside store/
 * includes this header (issue 18): callers use the typed functions of
 * store/<entity>.h, which say who frees what.
 */
#ifndef GOALD_STORE_INTERNAL_H
#define GOALD_STORE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>

#include <sqlite3.h>

#include "store/store.h"

sqlite3 *store_db(store *st);

/* Prepare sql (cached on the connection for its lifetime: callers must
 * sqlite3_reset() via store_done() and never finalize). */
int store_prepare(store *st, sqlite3_stmt **out, const char *sql);
void store_done(sqlite3_stmt *stmt); /* reset + clear bindings; accepts NULL */

/* Execute one or more statements without results. */
int store_exec(store *st, const char *sql);

/* The ids (first column) sql selects with arg bound as ?1, in order:
 * *out is a malloc'd array of *n ids (free() it; NULL when none). */
int store_ids(store *st, const char *sql, const char *arg, char (**out)[37], size_t *n);

/* Bind helpers: NULL text binds SQL NULL. */
int store_bind_text(sqlite3_stmt *s, int i, const char *v);
/* Column text as a malloc'd copy (caller frees) or NULL. */
char *store_col_strdup(sqlite3_stmt *s, int i);

/* Shared statement shapes (store/query.c), so each store/<entity>.c says
 * only its SQL, its values and its error wording (what). */

/* A value to bind as ?1, ?2, ...: STORE_TEXT(v) (NULL binds SQL NULL),
 * STORE_I64(v), STORE_DOUBLE(v), STORE_NULL.  STORE_ARGS(a, b, ...) passes an array
 * and its length as two arguments. */
enum store_arg_type { STORE_ARG_TEXT, STORE_ARG_I64, STORE_ARG_DOUBLE, STORE_ARG_NULL };
struct store_arg {
    enum store_arg_type type;
    const char *text;
    int64_t i64;
    double d;
};
#define STORE_TEXT(v) ((struct store_arg){.type = STORE_ARG_TEXT, .text = (v)})
#define STORE_I64(v) ((struct store_arg){.type = STORE_ARG_I64, .i64 = (v)})
#define STORE_DOUBLE(v) ((struct store_arg){.type = STORE_ARG_DOUBLE, .d = (v)})
#define STORE_NULL ((struct store_arg){.type = STORE_ARG_NULL})
#define STORE_ARGS(...)                                                                        \
    (const struct store_arg[]){__VA_ARGS__},                                                   \
        (int)(sizeof((const struct store_arg[]){__VA_ARGS__}) / sizeof(struct store_arg))

/* Bind args[0..n) as ?1..?n. */
void store_bind_args(sqlite3_stmt *s, const struct store_arg *args, int n);

/* store_prepare() then store_bind_args(): the statement is bound only when
 * the prepare succeeded (0). */
int store_prepare_args(store *st, sqlite3_stmt **out, const char *sql,
                       const struct store_arg *args, int n);

/* Step s: 1 while it has a row; 0 at its end (*rc untouched) or on a
 * step error (*rc = store_err(st, what)).  For
 * `while (store_next_row(st, s, what, &rc)) { ... }`. */
int store_next_row(store *st, sqlite3_stmt *s, const char *what, int *rc);

/* Step s, which returns no row, then store_done(s): 0, or store_err(st, what). */
int store_step_done(store *st, sqlite3_stmt *s, const char *what);

/* Prepare sql, bind args and step it to DONE: 0, or the store's error (what).
 * When changed is not NULL it gets sqlite3_changes() after the step (0 when
 * the prepare fails). */
int store_exec_args(store *st, const char *what, int *changed, const char *sql,
                    const struct store_arg *args, int n);

/* store_exec_args() of an INSERT: *id_out (when not NULL) gets the new
 * row's id after a successful step. */
int store_exec_insert(store *st, const char *what, int64_t *id_out, const char *sql,
                      const struct store_arg *args, int n);

/* store_exec_args() of sql with id bound as ?1 (UPDATE/DELETE ... WHERE id = ?1). */
int store_exec_id(store *st, const char *sql, const char *id, const char *what);

/* Column i as text: "" for NULL (valid until the next step/done of s). */
const char *store_col_text(sqlite3_stmt *s, int i);
/* Copy column i into out (n bytes, cut; "" for NULL). */
void store_col_copy(char *out, size_t n, sqlite3_stmt *s, int i);

/* Column 0 of each row of s (at most max) into rows, each width bytes
 * (cut); *n rows; then store_done(s).  A step error ends the rows. */
void store_rows_copy(char *rows, size_t width, int max, int *n, sqlite3_stmt *s);

/* The first column of the first row sql selects with args bound, as an
 * int64: *found 1 and *out set on a row; *found 0 and *out untouched when
 * none; a step error is store_err(st, what). */
int store_get_int64(store *st, const char *what, int64_t *out, int *found, const char *sql,
                    const struct store_arg *args, int n);

/* A status transition: sql binds ?1 to, ?2 now_ms, ?3 terminal, ?4 id,
 * ?5 from (UPDATE ... WHERE id = ?4 AND status = ?5).  *changed is 1 when
 * exactly one row moved; a step error is store_err(st, "status"). */
int store_status_set(store *st, const char *sql, const char *id, const char *from,
                     const char *to, int terminal, int64_t now_ms, int *changed);

/* Fill an out-value from the current row of s (ctx: the caller's). */
typedef void store_row_fn(sqlite3_stmt *s, void *ctx);

/* The first row sql selects with args bound: fill(s, ctx) and *found 1 on
 * a row; *found 0 when none; a step error is store_err(st, what). */
int store_get_row(store *st, const char *what, store_row_fn *fill, void *ctx, int *found,
                  const char *sql, const struct store_arg *args, int n);

/* Where store_get_texts() copies column i: out, n bytes (cut). */
struct store_text_col {
    char *out;
    size_t n;
};

/* store_get_row() copying columns 0..ncols-1 as text into cols[i] (""
 * for NULL); every out is "" when there is no row. */
int store_get_texts(store *st, const char *what, const struct store_text_col *cols, int ncols,
                    int *found, const char *sql, const struct store_arg *args, int nargs);

/* store_get_texts() of one column. */
int store_get_text(store *st, const char *what, char *out, size_t n, int *found,
                   const char *sql, const struct store_arg *args, int nargs);

/* The first column of the one row sql (args bound) selects, as an int64
 * (a count): a step error, or no row, is store_err(st, what). */
int store_count(store *st, const char *what, int64_t *out, const char *sql,
                const struct store_arg *args, int n);

/* Column 0 of the first row sql selects with args bound, copied into out
 * (n bytes, cut; "" for NULL or no row).  Only a prepare error is
 * returned: a step error reads as no row. */
int store_peek_text(store *st, char *out, size_t n, const char *sql,
                    const struct store_arg *args, int nargs);

/* store_rows_copy() of sql with args bound (*n is 0 on a prepare error,
 * which is returned; a step error ends the rows). */
int store_select_rows_copy(store *st, char *rows, size_t width, int max, int *n, const char *sql,
                           const struct store_arg *args, int nargs);

#endif
