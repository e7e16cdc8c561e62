#include "store/escalation.h"

#include "store/internal.h"

int store_escalation_count_open(store *st, int64_t *out)
{
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, "SELECT count(*) FROM escalations WHERE status = 'open'");

    *out = 0;
    if (rc)
        return rc;
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    else
        rc = store_err(st, "escalations");
    store_done(s);
    return rc;
}

int store_escalation_close_by_system(store *st, const char *goal_id, const char *reason,
                                     int64_t now_ms,
                                     int (*fn)(const char *id, const char *type, void *ctx),
                                     void *ctx)
{
    static const char sel[] = "SELECT id, type FROM escalations WHERE goal_id = ?"
                              " AND status = 'open' ORDER BY created_at, id";
    static const char upd[] = "UPDATE escalations SET status = 'resolved', resolution = 'system',"
                              " resolution_input = ?, resolved_at = ? WHERE id = ?";
    sqlite3_stmt *s, *u;
    int rc = store_prepare(st, &s, sel);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    while (rc == 0 && sqlite3_step(s) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if ((rc = store_prepare(st, &u, upd)) == 0) {
            store_bind_text(u, 1, reason);
            sqlite3_bind_int64(u, 2, now_ms);
            store_bind_text(u, 3, id);
            rc = sqlite3_step(u) == SQLITE_DONE ? 0 : store_err(st, "escalation");
            store_done(u);
        }
        if (rc == 0)
            rc = fn(id, (const char *)sqlite3_column_text(s, 1), ctx);
    }
    store_done(s);
    return rc;
}
