/*
 * internal.h - what only store/ may use: statements, their cache and the
 * bind/column helpers, over either backend (store/backend.h).  Nothing
 * outside store/ includes this header: callers use the typed
 * functions of store/<entity>.h, which say who frees what.
 *
 * SQL is written once for both backends where it can be: `?` and `?N`
 * placeholders (PostgreSQL's driver numbers them $N), coalesce() rather
 * than ifnull(), RETURNING for new ids, `rowid` (a column of that name in
 * PostgreSQL's schema).  A query whose dialects differ names both:
 * store_sql(st, sqlite_sql, pg_sql).
 */
#ifndef GOALD_STORE_INTERNAL_H
#define GOALD_STORE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

typedef struct store store; /* store.h: the connection */

typedef struct store_stmt store_stmt;

/* The type of a value to bind, or of a column's value (store_col_type). */
enum store_arg_type { STORE_ARG_TEXT, STORE_ARG_I64, STORE_ARG_DOUBLE, STORE_ARG_NULL };
struct store_arg {
    enum store_arg_type type;
    const char *text;
    int64_t i64;
    double d;
};

enum store_dialect { STORE_SQLITE, STORE_PG };

/* What store_step() returns: a row, the end, or a failure (the
 * connection's error: store_err()). */
#define STORE_ROW 100
#define STORE_DONE 101
#define STORE_FAIL 1

enum store_dialect store_dialect_of(const store *st);
/* sqlite_sql or pg_sql, by the backend of st (both are literals: the
 * statement cache keys on them). */
const char *store_sql(const store *st, const char *sqlite_sql, const char *pg_sql);

/* Prepare sql (cached on the connection for its lifetime: callers must
 * reset it via store_done() and never finalize it). */
int store_prepare(store *st, store_stmt **out, const char *sql);
void store_done(store_stmt *stmt); /* reset + clear bindings; accepts NULL */
/* A statement outside the cache (sql need not outlive it: tests build
 * theirs), finalised by store_finalize() (accepts NULL). */
int store_prepare_uncached(store *st, store_stmt **out, const char *sql);
void store_finalize(store_stmt *stmt);
int store_step(store_stmt *s); /* STORE_ROW, STORE_DONE or STORE_FAIL */
/* Rows the last step of s changed (INSERT, UPDATE, DELETE). */
int store_changes(store_stmt *s);

/* Execute one or more statements without results. */
int store_exec(store *st, const char *sql);

/* The ids (first column) sql selects with arg bound as ?1, in order:
 * *out is a malloc'd array of *n ids (free() it; NULL when none). */
int store_ids(store *st, const char *sql, const char *arg, char (**out)[37], size_t *n);

/* Bind helpers: NULL text binds SQL NULL. */
void store_bind_text(store_stmt *s, int i, const char *v);
void store_bind_i64(store_stmt *s, int i, int64_t v);
void store_bind_double(store_stmt *s, int i, double v);
void store_bind_null(store_stmt *s, int i);

/* Columns of the current row (i from 0). */
int store_col_null(store_stmt *s, int i);
int64_t store_col_i64(store_stmt *s, int i);
int store_col_int(store_stmt *s, int i);
double store_col_double(store_stmt *s, int i);
/* Column text, NULL for SQL NULL (valid until the next step/done). */
const char *store_col_raw(store_stmt *s, int i);
/* The result's columns (after a step): how many, the name of column i,
 * and the storage class of its value in the current row. */
int store_col_count(store_stmt *s);
const char *store_col_name(store_stmt *s, int i);
enum store_arg_type store_col_type(store_stmt *s, int i);
/* Column text as a malloc'd copy (caller frees) or NULL. */
char *store_col_strdup(store_stmt *s, int i);

/* One value of a table: column col of the row rowid (table and col are
 * literals, never user text). */
struct store_lite_cell {
    const char *table, *col;
    int64_t rowid;
};

/* SQLite only (store/sqlite.c): up to n bytes (n < 2 GiB) of the text or
 * blob in cell, from byte off on, into buf (*got: how many, 0 past its
 * end); *size receives its whole size in bytes.  It is read where it lies
 * (sqlite3_blob_read): a value of any size costs n bytes here.
 * ERR_NOTFOUND when the row is gone. */
int store_lite_text_read(store *st, const struct store_lite_cell *cell, int64_t off, char *buf,
                         size_t n, size_t *got, int64_t *size);

/* Shared statement shapes (store/query.c), so each store/<entity>.c says
 * only its SQL, its values and its error wording (what). */

/* A value to bind as ?1, ?2, ...: STORE_TEXT(v) (NULL binds SQL NULL),
 * STORE_I64(v), STORE_DOUBLE(v), STORE_NULL.  STORE_ARGS(a, b, ...) passes an array
 * and its length as two arguments. */
#define STORE_TEXT(v) ((struct store_arg){.type = STORE_ARG_TEXT, .text = (v)})
#define STORE_I64(v) ((struct store_arg){.type = STORE_ARG_I64, .i64 = (v)})
#define STORE_DOUBLE(v) ((struct store_arg){.type = STORE_ARG_DOUBLE, .d = (v)})
#define STORE_NULL ((struct store_arg){.type = STORE_ARG_NULL})
#define STORE_ARGS(...)                                                                            \
    (const struct store_arg[]){__VA_ARGS__},                                                       \
        (int)(sizeof((const struct store_arg[]){__VA_ARGS__}) / sizeof(struct store_arg))

/* Bind args[0..n) as ?1..?n. */
void store_bind_args(store_stmt *s, const struct store_arg *args, int n);

/* store_prepare() then store_bind_args(): the statement is bound only when
 * the prepare succeeded (0). */
int store_prepare_args(store *st, store_stmt **out, const char *sql, const struct store_arg *args,
                       int n);

/* Step s: 1 while it has a row; 0 at its end (*rc untouched) or on a
 * step error (*rc = store_err(st, what)).  For
 * `while (store_next_row(st, s, what, &rc)) { ... }`. */
int store_next_row(store *st, store_stmt *s, const char *what, int *rc);

/* Step s, which returns no row, then store_done(s): 0, or store_err(st, what). */
int store_step_done(store *st, store_stmt *s, const char *what);

/* Prepare sql, bind args and step it to DONE: 0, or the store's error (what).
 * When changed is not NULL it gets store_changes() after the step (0 when
 * the prepare fails). */
int store_exec_args(store *st, const char *what, int *changed, const char *sql,
                    const struct store_arg *args, int n);

/* store_exec_args() of an INSERT ending in RETURNING (its id: both
 * dialects): *id_out (when not NULL) gets the new row's id. */
int store_exec_insert(store *st, const char *what, int64_t *id_out, const char *sql,
                      const struct store_arg *args, int n);

/* store_exec_args() of sql with id bound as ?1 (UPDATE/DELETE ... WHERE id = ?1). */
int store_exec_id(store *st, const char *sql, const char *id, const char *what);

/* Column i as text: "" for NULL (valid until the next step/done of s). */
const char *store_col_text(store_stmt *s, int i);
/* Copy column i into out (n bytes, cut; "" for NULL). */
void store_col_copy(char *out, size_t n, store_stmt *s, int i);

/* Column 0 of each row of s (at most max) into rows, each width bytes
 * (cut); *n rows; then store_done(s).  A step error is returned. */
int store_rows_copy(store *st, char *rows, size_t width, int max, int *n, store_stmt *s);

/* The first column of the first row sql selects with args bound, as an
 * int64: *found 1 and *out set on a row; *found 0 and *out untouched when
 * none; a step error is store_err(st, what). */
int store_get_int64(store *st, const char *what, int64_t *out, int *found, const char *sql,
                    const struct store_arg *args, int n);

/* A status transition: sql binds ?1 to, ?2 now_ms, ?3 terminal, ?4 id,
 * ?5 from (UPDATE ... WHERE id = ?4 AND status = ?5).  *changed is 1 when
 * exactly one row moved; a step error is store_err(st, "status"). */
int store_status_set(store *st, const char *sql, const char *id, const char *from, const char *to,
                     int terminal, int64_t now_ms, int *changed);

/* The sql of store_status_set() for a table that stamps its rows:
 * updated_at at each move, started_at the first time status becomes
 * working, ended_at at a terminal one (goals, work_items). */
#define STORE_STATUS_STAMPED_SQL(table, working)                                                   \
    "UPDATE " table " SET status = ?1, updated_at = ?2,"                                           \
    " started_at = CASE WHEN ?1 = '" working "' THEN coalesce(started_at, ?2)"                     \
    " ELSE started_at END,"                                                                        \
    " ended_at = CASE WHEN ?3 THEN ?2 ELSE ended_at END WHERE id = ?4 AND status = ?5"

/* Fill an out-value from the current row of s (ctx: the caller's). */
typedef void store_row_fn(store_stmt *s, void *ctx);

/* The first row sql selects with args bound: fill(s, ctx) and *found 1 on
 * a row; *found 0 when none; a step error is store_err(st, what) (what
 * may be NULL): a failed read never reads as no row. */
int store_get_row(store *st, const char *what, store_row_fn *fill, void *ctx, int *found,
                  const char *sql, const struct store_arg *args, int n);

/* store_get_row() of a row that may be missing: ERR_NOTFOUND (no message
 * set: the caller's to say, or not) when there is none. */
int store_get_one(store *st, const char *what, store_row_fn *fill, void *ctx, const char *sql,
                  const struct store_arg *args, int n);

/* A row handed to the caller of store_each_row(): nonzero ends the rows
 * and is what store_each_row() returns. */
typedef int store_each_fn(store_stmt *s, void *ctx);

/* Each row sql selects with args bound, handed to fn(s, ctx) until it
 * returns nonzero (returned); then store_done().  A step error is
 * store_err(st, what) (what may be NULL). */
int store_each_row(store *st, const char *what, store_each_fn *fn, void *ctx, const char *sql,
                   const struct store_arg *args, int n);

/* Where store_fields_fill() puts column col of the current row: the
 * member at off (size bytes) of a row struct, read as its kind.  A table
 * of them is a query's row layout, written with STORE_FIELD(type, member,
 * KIND, col) and passed as STORE_FIELDS(table) (the table and its length,
 * as STORE_ARGS does for values). */
enum store_field_kind {
    STORE_FIELD_RAW,        /* (const) char *: the text, NULL for SQL NULL */
    STORE_FIELD_COPY,       /* char[size]: the text cut to fit, "" for NULL */
    STORE_FIELD_INT,        /* int */
    STORE_FIELD_OPT_INT,    /* int, -1 for NULL */
    STORE_FIELD_SET,        /* int: 1 when the column is not NULL */
    STORE_FIELD_LONG,       /* long */
    STORE_FIELD_I64,        /* int64_t */
    STORE_FIELD_OPT_I64,    /* int64_t, -1 for NULL */
    STORE_FIELD_DOUBLE,     /* double */
    STORE_FIELD_OPT_DOUBLE, /* double, -1 for NULL */
};
struct store_field {
    int col;
    enum store_field_kind kind;
    size_t off, size;
};
/* The member sizes each kind may fill (COPY: any char array); a table
 * naming a member of another size does not compile (an array of size -1). */
#define STORE_FIELD_FITS_RAW(n) ((n) == sizeof(char *))
#define STORE_FIELD_FITS_COPY(n) ((n) > 0)
#define STORE_FIELD_FITS_INT(n) ((n) == sizeof(int))
#define STORE_FIELD_FITS_OPT_INT(n) ((n) == sizeof(int))
#define STORE_FIELD_FITS_SET(n) ((n) == sizeof(int))
#define STORE_FIELD_FITS_LONG(n) ((n) == sizeof(long))
#define STORE_FIELD_FITS_I64(n) ((n) == sizeof(int64_t))
#define STORE_FIELD_FITS_OPT_I64(n) ((n) == sizeof(int64_t))
#define STORE_FIELD_FITS_DOUBLE(n) ((n) == sizeof(double))
#define STORE_FIELD_FITS_OPT_DOUBLE(n) ((n) == sizeof(double))
#define STORE_FIELD_SIZE(type, member, kind)                                                       \
    (sizeof(((type *)0)->member) +                                                                 \
     0 * sizeof(char[STORE_FIELD_FITS_##kind(sizeof(((type *)0)->member)) ? 1 : -1]))
#define STORE_FIELD(type, member, kind, col)                                                       \
    {                                                                                              \
        (col), STORE_FIELD_##kind, offsetof(type, member), STORE_FIELD_SIZE(type, member, kind)    \
    }
#define STORE_FIELDS(table) (table), (int)(sizeof(table) / sizeof((table)[0]))

/* An entity's columns, written once: an X-macro list
 *
 *   #define ITEM_COLUMNS(FIRST, NEXT)                       \
 *       FIRST(id, COPY, STORE_TEXT(row->id))                \
 *       NEXT(goal_id, COPY, STORE_TEXT(row->goal_id)) ...
 *
 * names each column in table order (the column and the member of the row
 * struct it fills have one name), the member's STORE_FIELD kind, and the
 * value an INSERT of the whole row binds for it: an expression of row (a
 * pointer to the struct being inserted) and now (the time of the insert,
 * in ms).  The first column is FIRST, every later one NEXT.  From the
 * list, as literals or initialisers:
 *   STORE_COLS(LIST)          "id, goal_id, ..." (SELECT and INSERT lists)
 *   STORE_PLACEHOLDERS(LIST)  "?,?,..." (one per column)
 *   STORE_VALUES(LIST)        the values to bind, for STORE_ARGS()
 * and, with a per-entity enum of column numbers (`#define ITEM_COL(m, k,
 * v) ITEM_COL_##m,` then `enum { ITEM_COLUMNS(ITEM_COL, ITEM_COL) };`), the
 * STORE_FIELD table.  scripts/columns fails when such a table's columns are
 * written again by hand. */
#define STORE_COL_NAME_FIRST(member, kind, value) #member
#define STORE_COL_NAME_NEXT(member, kind, value) ", " #member
#define STORE_COLS(LIST) LIST(STORE_COL_NAME_FIRST, STORE_COL_NAME_NEXT)
#define STORE_COL_MARK_FIRST(member, kind, value) "?"
#define STORE_COL_MARK_NEXT(member, kind, value) ",?"
#define STORE_PLACEHOLDERS(LIST) LIST(STORE_COL_MARK_FIRST, STORE_COL_MARK_NEXT)
#define STORE_COL_VALUE(member, kind, value) value,
#define STORE_VALUES(LIST) LIST(STORE_COL_VALUE, STORE_COL_VALUE)

/* Fill row from the current row of s by fields[0..n).  RAW strings point
 * into s (valid until its next step or done) or, with copy, are malloc'd
 * copies (the caller frees them with free()).  Members not named are left
 * as they are. */
void store_fields_fill(void *row, store_stmt *s, const struct store_field *fields, int n, int copy);

/* A new row (size bytes, malloc'd and zeroed) filled by fields with
 * copy: the caller frees its RAW members (store_fields_free()) and it. */
void *store_fields_dup(store_stmt *s, size_t size, const struct store_field *fields, int n);

/* Free the RAW members of row (copies store_fields_fill() made); row
 * itself is the caller's. */
void store_fields_free(void *row, const struct store_field *fields, int n);

/* A row struct and its layout, for store_fields_row(), store_get_fields()
 * and store_iter_next() (size: the row's bytes, which the last two zero
 * first).  STORE_INTO(row, table) makes one (a pointer) for row, a
 * pointer to a struct, and a STORE_FIELD table. */
struct store_fields_into {
    void *row;
    const struct store_field *fields;
    int n;
    size_t size;
};
#define STORE_INTO(row, table)                                                                     \
    (&(const struct store_fields_into){(row), STORE_FIELDS(table), sizeof(*(row))})
/* store_row_fn: store_fields_fill() of (const struct store_fields_into *)ctx
 * (strings borrowed). */
void store_fields_row(store_stmt *s, void *ctx);

/* store_get_row() into into->row (into->size bytes, zeroed first) by
 * into->fields. */
int store_get_fields(store *st, const char *what, const struct store_fields_into *into, int *found,
                     const char *sql, const struct store_arg *args, int nargs);

/* store_get_row() of the row sql selects with id bound as ?1: ERR_NOTFOUND
 * "WHAT ID: not found" when there is none; a step error is store_err(st,
 * what). */
int store_get_by_id(store *st, const char *what, store_row_fn *fill, void *ctx, const char *sql,
                    const char *id);

/* A pull cursor over the rows sql selects (args bound), typed where it is
 * used: each row lands in the caller's own struct, handed to the caller's
 * own function, with no cast.
 *
 *   struct store_iter it;
 *   struct work_item row;
 *
 *   store_iter_begin(&it, st, "work items", sql, args, nargs);
 *   while ((rc = store_iter_next(&it, STORE_INTO(&row, item_fields))) > 0)
 *       if ((rc = fn(&row, ctx)) != 0)
 *           break;
 *   return store_iter_end(&it, rc);
 *
 * store_iter_begin() prepares (from the statement cache) and binds; a
 * prepare error is kept and is what the first store_iter_next() returns.
 * store_iter_next() steps: 1 with a row, into->row zeroed (into->size
 * bytes) then filled by into->fields (store_fields_fill(), strings
 * borrowed: valid until the next store_iter_next() or store_iter_end());
 * 0 at the end (and at every call after it); a step error is
 * store_err(st, what) (what NULL: "read"), returned by this call and the
 * ones after.  into NULL only steps: the columns are read from it.s.
 * store_iter_end() gives the statement back to the cache (store_done())
 * and returns rc, the loop's result: 0 at the end, a step error, or the
 * nonzero value the caller's function ended the rows with.  Every begin
 * has one end, whatever the loop did; the cursor owns no memory. */
struct store_iter {
    store *st;
    store_stmt *s; /* NULL when the prepare failed */
    const char *what;
    int rc;   /* the prepare's or a step's error, 0 */
    int done; /* the rows are over (or failed): never step again */
};

void store_iter_begin(struct store_iter *it, store *st, const char *what, const char *sql,
                      const struct store_arg *args, int nargs);
int store_iter_next(struct store_iter *it, const struct store_fields_into *into);
int store_iter_end(struct store_iter *it, int rc);

/* The elements of an array of rows (store_rows_fill(), store_rows_alloc()):
 * size bytes each, zeroed, then fill(s, element).  STORE_ROW_SHAPE(elem,
 * fill) makes one (a pointer); elem is an expression of the element's type
 * (*rows), never evaluated. */
struct store_row_shape {
    size_t size;
    store_row_fn *fill;
};
#define STORE_ROW_SHAPE(elem, fill) (&(const struct store_row_shape){sizeof(elem), (fill)})

/* At most max rows sql selects (args bound) into rows, an array of
 * elements of shape; *n how many.  A step error ends the rows; only a
 * prepare error is returned. */
int store_rows_fill(store *st, void *rows, int max, int *n, const struct store_row_shape *shape,
                    const char *sql, const struct store_arg *args, int nargs);

/* Every row sql selects (args bound) into a malloc'd array *out of *n
 * elements of shape: free() it; NULL when none.  A step error is
 * store_err(st, what) with *out NULL, or with what NULL ends the rows
 * quietly. */
int store_rows_alloc(store *st, const char *what, void **out, size_t *n,
                     const struct store_row_shape *shape, const char *sql,
                     const struct store_arg *args, int nargs);

/* store_rows_alloc() of column 0 as ids (37 bytes each, cut). */
int store_ids_args(store *st, const char *what, char (**out)[37], size_t *n, const char *sql,
                   const struct store_arg *args, int nargs);

/* One key of the JSON objects store_json_rows() makes: column col as a
 * string (STORE_JSON_TEXT: "" for NULL, or if_null when that is set) or
 * as a number (STORE_JSON_INT). */
enum store_json_kind { STORE_JSON_TEXT, STORE_JSON_INT };
struct store_json_col {
    const char *key;
    int col;
    enum store_json_kind kind;
    const char *if_null;
};

struct cJSON;
/* The current row of s as a new JSON object of cols[0..ncols) (the
 * caller's to add or cJSON_Delete). */
struct cJSON *store_json_object(store_stmt *s, const struct store_json_col *cols, int ncols);

/* Each row sql selects (args bound) as a JSON object of cols[0..ncols),
 * appended to arr (the caller's).  A prepare or step error is returned. */
int store_json_rows(store *st, struct cJSON *arr, const struct store_json_col *cols, int ncols,
                    const char *sql, const struct store_arg *args, int nargs);

/* The store_arg of an optional value: STORE_NULL when v < 0. */
struct store_arg store_arg_opt_i64(int64_t v);
struct store_arg store_arg_opt_double(double v);

/* store_get_row() of column 0 as a malloc'd copy into *out (free() it;
 * NULL for SQL NULL or no row). */
int store_get_strdup(store *st, const char *what, char **out, int *found, const char *sql,
                     const struct store_arg *args, int n);

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
int store_get_text(store *st, const char *what, char *out, size_t n, int *found, const char *sql,
                   const struct store_arg *args, int nargs);

/* The first column of the one row sql (args bound) selects, as an int64
 * (a count): a step error, or no row, is store_err(st, what). */
int store_count(store *st, const char *what, int64_t *out, const char *sql,
                const struct store_arg *args, int n);

/* Column 0 of the first row sql selects with args bound, copied into out
 * (n bytes, cut; "" for NULL or no row).  A failed read is an error, never
 * "no row". */
int store_peek_text(store *st, char *out, size_t n, const char *sql, const struct store_arg *args,
                    int nargs);

/* store_rows_copy() of sql with args bound (*n is 0 on a prepare error;
 * a prepare or step error is returned). */
int store_select_rows_copy(store *st, char *rows, size_t width, int max, int *n, const char *sql,
                           const struct store_arg *args, int nargs);

#endif
