/* artifact.c - the artifacts table (see artifact.h). */
#include "store/artifact.h"

#include <cjson/cJSON.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define ART(member, col) STORE_FIELD(struct store_artifact, member, RAW, col)

int store_artifact_each(store *st, const char *goal_id, const char *type,
                        int (*fn)(const struct store_artifact *a, void *ctx), void *ctx)
{
    struct store_artifact row;
    struct store_iter it;
    int rc;
    static const char sql_all[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                                  " FROM artifacts WHERE goal_id = ? ORDER BY id";
    static const char sql_type[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                                   " FROM artifacts WHERE goal_id = ? AND type = ? ORDER BY id";
    const struct store_arg args[] = {STORE_TEXT(goal_id), STORE_TEXT(type)};
    static const struct store_field cols[] = {
        ART(type, 0),
        ART(ref, 1),
        ART(path, 2),
        ART(hash, 3),
        ART(url, 4),
        ART(item_id, 5),
        STORE_FIELD(struct store_artifact, created_at, I64, 6),
    };

    store_iter_begin(&it, st, "artifacts", type ? sql_type : sql_all, args, type ? 2 : 1);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_artifact_add_once(store *st, const struct store_artifact_new *a)
{
    static const char exists[] =
        "SELECT 1 FROM artifacts WHERE goal_id = ? AND type = ? AND coalesce(item_id, '') = ?"
        " AND coalesce(hash, '') = coalesce(?, '') AND coalesce(path, '') = coalesce(?, '')";
    static const char ins[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, ref, path, hash, url, meta,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    char *mt = a->meta ? cJSON_PrintUnformatted(a->meta) : NULL;
    int64_t one;
    int rc, found = 0;

    /* once per item, type, hash and path: a re-run does not record twice */
    rc = store_get_int64(st, NULL, &one, &found, exists,
                         STORE_ARGS(STORE_TEXT(a->goal_id), STORE_TEXT(a->type),
                                    STORE_TEXT(a->item_id ? a->item_id : ""), STORE_TEXT(a->hash),
                                    STORE_TEXT(a->path)));
    if (rc || found)
        goto out;
    rc = store_exec_args(st, "artifact", NULL, ins,
                         STORE_ARGS(STORE_TEXT(a->goal_id), STORE_TEXT(a->item_id),
                                    STORE_TEXT(a->run_id), STORE_TEXT(a->type), STORE_TEXT(a->ref),
                                    STORE_TEXT(a->path), STORE_TEXT(a->hash), STORE_TEXT(a->url),
                                    STORE_TEXT(mt ? mt : "{}"), STORE_I64(time_now_ms())));
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
