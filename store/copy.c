/*
 * copy.c - a goald database copied into another one (see copy.h).
 *
 * The statements here are built from the source's own schema (table and
 * column names read from sqlite_master and from each table's rows, quoted
 * as identifiers), so they bypass the statement cache: each is prepared
 * once for its table and finalised after it.
 */
#include "store/copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/strbuf.h"

/* name as an SQL identifier: in double quotes, inner quotes doubled. */
static int add_ident(strbuf *sb, const char *name)
{
    int rc = strbuf_addc(sb, '"');

    for (const char *p = name; rc == 0 && *p; p++)
        rc = *p == '"' ? strbuf_adds(sb, "\"\"") : strbuf_addc(sb, *p);
    return rc ? rc : strbuf_addc(sb, '"');
}

/* fmt with %s replaced by the identifier name (once), into a new string. */
static int sql_for(char **out, const char *fmt, const char *name)
{
    const char *at = strstr(fmt, "%s");
    strbuf sb = STRBUF_INIT;
    int rc = strbuf_add(&sb, fmt, (size_t)(at - fmt));

    if (rc == 0)
        rc = add_ident(&sb, name);
    if (rc == 0)
        rc = strbuf_adds(&sb, at + 2);
    if (rc) {
        strbuf_release(&sb);
        return rc;
    }
    *out = strbuf_detach(&sb, NULL);
    return 0;
}

/* The one number the statement fmt (a table name for its %s) answers. */
static int table_number(store *st, const char *fmt, const char *table, int64_t *out)
{
    store_stmt *s = NULL;
    char *sql = NULL;
    int rc;

    if ((rc = sql_for(&sql, fmt, table)) != 0 || (rc = store_prepare_uncached(st, &s, sql)) != 0)
        goto out;
    if (store_step(s) == STORE_ROW)
        *out = store_col_i64(s, 0);
    else
        rc = store_err(st, table);
out:
    store_finalize(s);
    free(sql);
    return rc;
}

/* Where list_tables() puts the tables it reads. */
struct table_list {
    struct store_copy_table *out;
    int *n;
};

static int table_row(store_stmt *s, void *ctx)
{
    const struct table_list *l = ctx;
    struct store_copy_table *t;

    if (*l->n == STORE_COPY_MAX_TABLES)
        return err_set(ERR_INVALID, "more than %d tables", STORE_COPY_MAX_TABLES);
    t = &l->out[*l->n];
    store_col_copy(t->name, sizeof(t->name), s, 0);
    t->rows = 0;
    (*l->n)++;
    return 0;
}

/* The source's goald tables in the order they were made. */
static int list_tables(store *src, struct store_copy_table out[STORE_COPY_MAX_TABLES], int *n)
{
    static const char q[] = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN"
                            " ('schema_migrations', 'daemon_heartbeat', 'sqlite_sequence')"
                            " AND name NOT LIKE 'sqlite_%' ORDER BY rowid";
    struct table_list l = {out, n};

    *n = 0;
    return store_each_row(src, "tables", table_row, &l, q, NULL, 0);
}

/* INSERT INTO table(its columns as the source's row s names them). */
static int insert_sql(char **out, const char *table, store_stmt *s)
{
    strbuf sb = STRBUF_INIT;
    int ncols = store_col_count(s);
    int rc = strbuf_adds(&sb, "INSERT INTO ");

    if (rc == 0)
        rc = add_ident(&sb, table);
    for (int i = 0; rc == 0 && i < ncols; i++)
        if ((rc = strbuf_adds(&sb, i ? ", " : "(")) == 0)
            rc = add_ident(&sb, store_col_name(s, i));
    for (int i = 0; rc == 0 && i < ncols; i++)
        rc = strbuf_adds(&sb, i ? ", ?" : ") VALUES (?");
    if (rc == 0)
        rc = strbuf_addc(&sb, ')');
    if (rc) {
        strbuf_release(&sb);
        return rc;
    }
    *out = strbuf_detach(&sb, NULL);
    return 0;
}

/* Bind the source row s's values, each with its own type, to ins. */
static void bind_row(store_stmt *ins, store_stmt *s)
{
    for (int i = 0; i < store_col_count(s); i++) {
        switch (store_col_type(s, i)) {
        case STORE_ARG_I64:
            store_bind_i64(ins, i + 1, store_col_i64(s, i));
            break;
        case STORE_ARG_DOUBLE:
            store_bind_double(ins, i + 1, store_col_double(s, i));
            break;
        case STORE_ARG_NULL:
            store_bind_null(ins, i + 1);
            break;
        case STORE_ARG_TEXT:
            store_bind_text(ins, i + 1, store_col_raw(s, i));
            break;
        }
    }
}

/* Copy table t's rows from src into dst in their insertion order. */
static int copy_table(store *dst, store *src, struct store_copy_table *t)
{
    store_stmt *s = NULL, *ins = NULL;
    char *sel = NULL, *isql = NULL;
    int rc, step;

    if ((rc = sql_for(&sel, "SELECT * FROM %s ORDER BY rowid", t->name)) != 0 ||
        (rc = store_prepare_uncached(src, &s, sel)) != 0)
        goto out;
    while ((step = store_step(s)) == STORE_ROW) {
        if (!ins && ((rc = insert_sql(&isql, t->name, s)) != 0 ||
                     (rc = store_prepare_uncached(dst, &ins, isql)) != 0))
            goto out;
        bind_row(ins, s);
        if (store_step(ins) != STORE_DONE) {
            rc = store_err(dst, t->name);
            goto out;
        }
        store_done(ins);
        t->rows++;
    }
    if (step != STORE_DONE)
        rc = store_err(src, t->name);
out:
    store_finalize(ins);
    store_finalize(s);
    free(isql);
    free(sel);
    return rc;
}

/* PostgreSQL: each identity id's sequence continues after the copied ids. */
static int advance_ids(store *dst, const struct store_copy_table *t, int n)
{
    int rc = 0;

    for (int i = 0; rc == 0 && i < n; i++) {
        char seq[256] = "";
        int found = 0;

        /* the catalog of this schema only: information_schema's views
         * check privileges on every relation of the database, and one
         * that another session drops meanwhile fails the whole query
         * ("relation with OID ... does not exist") */
        rc = store_get_text(dst, "sequence", seq, sizeof(seq), &found,
                            "SELECT pg_get_serial_sequence(CAST(?1 AS TEXT), 'id')"
                            " FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c"
                            " ON c.oid = a.attrelid WHERE c.relnamespace ="
                            " CAST(current_schema() AS regnamespace) AND c.relname = ?1"
                            " AND a.attname = 'id' AND NOT a.attisdropped",
                            STORE_ARGS(STORE_TEXT(t[i].name)));
        if (rc == 0 && seq[0]) {
            int64_t v = 0;
            char fmt[400];

            /* the sequence's name is PostgreSQL's own answer: quoted as a
             * literal for setval's regclass */
            /* a statement cut short is never run */
            if ((size_t)snprintf(fmt, sizeof(fmt),
                                 "SELECT setval('%s', (SELECT coalesce(max(id), 0) + 1 FROM %%s), "
                                 "false)",
                                 seq) >= sizeof(fmt) ||
                strchr(seq, '\''))
                rc = err_set(ERR_DB, "%s: an odd sequence name", t[i].name);
            else
                rc = table_number(dst, fmt, t[i].name, &v);
        }
    }
    return rc;
}

/* Every table empty in dst (else ERR_INVALID naming the first that is not). */
static int refuse_filled(store *dst, const struct store_copy_table *t, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t rows = 0;
        int rc = table_number(dst, "SELECT count(*) FROM %s", t[i].name, &rows);

        if (rc)
            return rc;
        if (rows)
            return err_set(ERR_INVALID,
                           "the target is not empty: its table %s holds %lld rows (copy only "
                           "into a database goald has not used)",
                           t[i].name, (long long)rows);
    }
    return 0;
}

/* Every table holds in dst what was copied, and src what it read. */
static int check_counts(store *dst, store *src, const struct store_copy_table *t, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t a = -1, b = -1;
        int rc = table_number(dst, "SELECT count(*) FROM %s", t[i].name, &a);

        if (rc == 0)
            rc = table_number(src, "SELECT count(*) FROM %s", t[i].name, &b);
        if (rc)
            return rc;
        if (a != t[i].rows || b != t[i].rows)
            return err_set(ERR_DB, "%s: %lld rows copied, the source holds %lld, the target %lld",
                           t[i].name, (long long)t[i].rows, (long long)b, (long long)a);
    }
    return 0;
}

int store_copy_all(store *dst, store *src, struct store_copy_table out[STORE_COPY_MAX_TABLES],
                   int *n)
{
    int rc;

    *n = 0;
    if (store_dialect_of(src) != STORE_SQLITE)
        return err_set(ERR_INVALID, "the source must be a SQLite database");
    if ((rc = list_tables(src, out, n)) != 0 || (rc = refuse_filled(dst, out, *n)) != 0)
        return rc;
    if ((rc = store_read_begin(src)) != 0)
        return rc;
    if ((rc = store_tx_begin(dst)) != 0)
        goto out;
    for (int i = 0; rc == 0 && i < *n; i++)
        rc = copy_table(dst, src, &out[i]);
    if (rc == 0 && store_dialect_of(dst) == STORE_PG)
        rc = advance_ids(dst, out, *n);
    if (rc == 0)
        rc = check_counts(dst, src, out, *n);
    rc = store_tx_end(dst, rc);
    if (rc == 0)
        rc = store_exec(dst, "ANALYZE"); /* a bulk load: the planner's statistics */
out:
    store_read_end(src);
    return rc;
}
