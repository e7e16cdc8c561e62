/* artifact.c - the artifacts table (see artifact.h). */
#include "store/artifact.h"

#include "store/internal.h"

int store_artifact_each(store *st, const char *goal_id, const char *type,
                        int (*fn)(const struct store_artifact *a, void *ctx), void *ctx)
{
    static const char sql_all[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                                  " FROM artifacts WHERE goal_id = ? ORDER BY id";
    static const char sql_type[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                                   " FROM artifacts WHERE goal_id = ? AND type = ? ORDER BY id";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, type ? sql_type : sql_all);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (type)
        store_bind_text(s, 2, type);
    for (;;) {
        struct store_artifact a;
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "artifacts");
            break;
        }
        a.type = (const char *)sqlite3_column_text(s, 0);
        a.ref = (const char *)sqlite3_column_text(s, 1);
        a.path = (const char *)sqlite3_column_text(s, 2);
        a.hash = (const char *)sqlite3_column_text(s, 3);
        a.url = (const char *)sqlite3_column_text(s, 4);
        a.item_id = (const char *)sqlite3_column_text(s, 5);
        a.created_at = sqlite3_column_int64(s, 6);
        if ((rc = fn(&a, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}
