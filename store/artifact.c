/* artifact.c - the artifacts table (see artifact.h). */
#include "store/artifact.h"

#include <cjson/cJSON.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

int store_artifact_each(store *st, const char *goal_id, const char *type,
                        int (*fn)(const struct store_artifact *a, void *ctx), void *ctx)
{
    static const char sql_all[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                                  " FROM artifacts WHERE goal_id = ? ORDER BY id";
    static const char sql_type[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                                   " FROM artifacts WHERE goal_id = ? AND type = ? ORDER BY id";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, type ? sql_type : sql_all, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    if (type)
        store_bind_text(s, 2, type);
    while (store_next_row(st, s, "artifacts", &rc)) {
        struct store_artifact a;
        a.type = store_col_raw(s, 0);
        a.ref = store_col_raw(s, 1);
        a.path = store_col_raw(s, 2);
        a.hash = store_col_raw(s, 3);
        a.url = store_col_raw(s, 4);
        a.item_id = store_col_raw(s, 5);
        a.created_at = store_col_i64(s, 6);
        if ((rc = fn(&a, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}

int store_artifact_add_once(store *st, const char *goal_id, const char *item_id, const char *run_id,
                            const char *type, const char *ref, const char *path, const char *hash,
                            const char *url, const struct cJSON *meta)
{
    static const char exists[] =
        "SELECT 1 FROM artifacts WHERE goal_id = ? AND type = ? AND coalesce(item_id, '') = ?"
        " AND coalesce(hash, '') = coalesce(?, '') AND coalesce(path, '') = coalesce(?, '')";
    static const char ins[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, ref, path, hash, url, meta,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    store_stmt *s;
    char *mt = meta ? cJSON_PrintUnformatted(meta) : NULL;
    int rc, found = 0;

    /* once per item, type, hash and path: a re-run does not record twice */
    if ((rc = store_prepare(st, &s, exists)) != 0)
        goto out;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, type);
    store_bind_text(s, 3, item_id ? item_id : "");
    store_bind_text(s, 4, hash);
    store_bind_text(s, 5, path);
    found = store_step(s) == STORE_ROW;
    store_done(s);
    if (found)
        goto out;
    rc = store_exec_args(st, "artifact", NULL, ins,
                         STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(item_id), STORE_TEXT(run_id),
                                    STORE_TEXT(type), STORE_TEXT(ref), STORE_TEXT(path),
                                    STORE_TEXT(hash), STORE_TEXT(url), STORE_TEXT(mt ? mt : "{}"),
                                    STORE_I64(time_now_ms())));
out:
    cJSON_free(mt);
    return rc;
}

int store_artifact_insert_patch(store *st, const char *goal_id, const char *item_id,
                                const char *run_id, const char *path, const char *hash,
                                const char *meta_json, int64_t now_ms)
{
    static const char sql[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, path, hash, meta, created_at)"
        " VALUES (?, ?, ?, 'patch', ?, ?, ?, ?)";
    return store_exec_args(st, "patch artifact", NULL, sql,
                           STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(item_id), STORE_TEXT(run_id),
                                      STORE_TEXT(path), STORE_TEXT(hash), STORE_TEXT(meta_json),
                                      STORE_I64(now_ms)));
}
