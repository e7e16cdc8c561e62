/* run.c - the runs table (see run.h). */
#include "store/run.h"

#include <stdio.h>
#include <string.h>

#include "store/internal.h"

/* Copy column i of the current row into out (n bytes; "" when NULL). */
static void col_copy(char *out, size_t n, sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    snprintf(out, n, "%s", t ? (const char *)t : "");
}

int store_run_latest_running(store *st, const char *goal_id, struct store_run_running *out,
                             int *found)
{
    static const char q_run[] =
        "SELECT r.id, r.kind, ifnull(w.key, ''), ifnull(w.title, ''), r.started_at,"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'turn.started')"
        " FROM runs r LEFT JOIN work_items w ON w.id = r.item_id"
        " WHERE r.goal_id = ? AND r.status = 'running' ORDER BY r.started_at DESC LIMIT 1";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_run);

    memset(out, 0, sizeof(*out));
    out->started_at = -1;
    *found = 0;
    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    switch (sqlite3_step(s)) {
    case SQLITE_ROW:
        col_copy(out->id, sizeof(out->id), s, 0);
        col_copy(out->kind, sizeof(out->kind), s, 1);
        col_copy(out->item_key, sizeof(out->item_key), s, 2);
        col_copy(out->item_title, sizeof(out->item_title), s, 3);
        out->started_at =
            sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 4);
        out->turns_started = sqlite3_column_int(s, 5);
        *found = 1;
        break;
    case SQLITE_DONE:
        break;
    default:
        rc = store_err(st, "runs");
    }
    store_done(s);
    return rc;
}
