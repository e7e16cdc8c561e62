/* goald migrate [--to URL] : apply pending database migrations; or copy
 * this (SQLite) database into an empty PostgreSQL one. */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "cli/cli.h"
#include "store/copy.h"
#include "util/xalloc.h"

/* Print what store_copy_all() copied: a line per table and the total. */
static int print_copied(const struct cli_ctx *c, const char *to, const struct store_copy_table *t,
                        int n)
{
    int64_t total = 0;
    cJSON *o, *tables;
    int rc;

    for (int i = 0; i < n; i++)
        total += t[i].rows;
    if (!cli_flag(c, "json")) {
        for (int i = 0; i < n; i++)
            printf("%s: %lld rows\n", t[i].name, (long long)t[i].rows);
        printf("copied %lld rows in %d tables into %s; the counts match\n", (long long)total, n,
               to);
        return EXIT_OK;
    }
    o = cJSON_CreateObject();
    tables = cJSON_AddObjectToObject(o, "tables");
    for (int i = 0; i < n; i++)
        cJSON_AddNumberToObject(tables, t[i].name, (double)t[i].rows);
    cJSON_AddNumberToObject(o, "total", (double)total);
    rc = cli_print_json(o);
    cJSON_Delete(o);
    return rc;
}

static int copy_to(struct cli_ctx *c, store *src, const char *to)
{
    struct store_copy_table t[STORE_COPY_MAX_TABLES];
    store *dst = NULL;
    int n = 0, rc;

    if (!store_is_url(to))
        return cli_fail(EXIT_USAGE, "migrate: --to takes a PostgreSQL URL (postgres://...)");
    if (store_is_url(store_path(src)))
        return cli_fail(EXIT_USAGE, "migrate: --to copies a SQLite database: --db is not one");
    if ((rc = store_open(&dst, to)) != 0)
        return cli_fail(EXIT_FAIL, "migrate: %s", err_last());
    rc = store_copy_all(dst, src, t, &n);
    store_close(dst);
    if (rc)
        return cli_fail(EXIT_FAIL, "migrate: %s", err_last());
    return print_copied(c, to, t, n);
}

static int run(struct cli_ctx *c)
{
    const char *to = cli_opt(c, "to");
    store *st;
    int v = 0;
    int rc;

    /* opening applies pending migrations; say where that left the schema */
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if (to)
        return copy_to(c, st, to);
    if ((rc = store_schema_version(st, &v)) != 0)
        return cli_fail_err(rc);
    printf("%s: schema version %d (this goald knows up to %d)\n", store_path(st), v,
           store_schema_latest());
    return EXIT_OK;
}

const struct cli_command cmd_migrate = {
    .name = "migrate",
    .args = "",
    .summary = "apply pending database migrations (also done on every open); --to: copy "
               "into PostgreSQL",
    .details = "With --to URL, copies this SQLite database (--db) into an empty PostgreSQL\n"
               "database: every table, value, id and order, in one transaction, then checks\n"
               "each table's row count on both sides.  A target holding any row is refused\n"
               "and left as it was.  The URL carries no password (PGPASSFILE or ~/.pgpass).\n"
               "Stop the daemon first: what it writes during the copy is not copied.",
    .opts = (const struct cli_opt[]){{"to", "URL", "copy into this empty PostgreSQL database"},
                                     {"json", NULL, "print {\"tables\": {...}, \"total\": N}"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "with --to: {\"tables\": {TABLE: ROWS, ...}, \"total\": N}",
};
