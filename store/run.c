/*
 * run.c - the runs table (see run.h for who frees what).
 */
#include "store/run.h"

#include <stdlib.h>

#include "store/internal.h"
#include "util/err.h"

int store_run_last_failure(store *st, const char *item_id, const char *except_run_id,
                           char **error_class, char **reason)
{
    static const char q_run[] =
        "SELECT error_class, failure_reason FROM runs WHERE item_id = ? AND id <> ?"
        " AND status <> 'success' AND status <> 'running' ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1";
    sqlite3_stmt *s;
    int rc;

    *error_class = *reason = NULL;
    if ((rc = store_prepare(st, &s, q_run)) != 0)
        return rc;
    store_bind_text(s, 1, item_id);
    store_bind_text(s, 2, except_run_id);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 1)) {
        *error_class = store_col_strdup(s, 0);
        *reason = store_col_strdup(s, 1);
    }
    store_done(s);
    return 0;
}
