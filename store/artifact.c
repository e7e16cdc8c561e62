#include "store/artifact.h"

#include "store/internal.h"

int store_artifact_insert_patch(store *st, const char *goal_id, const char *item_id,
                                const char *run_id, const char *path, const char *hash,
                                const char *meta_json, int64_t now_ms)
{
    static const char sql[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, path, hash, meta, created_at)"
        " VALUES (?, ?, ?, 'patch', ?, ?, ?, ?)";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, item_id);
    store_bind_text(s, 3, run_id);
    store_bind_text(s, 4, path);
    store_bind_text(s, 5, hash);
    store_bind_text(s, 6, meta_json);
    sqlite3_bind_int64(s, 7, now_ms);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "patch artifact");
    store_done(s);
    return rc;
}
