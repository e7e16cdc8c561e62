/*
 * artifact.c - the artifacts table (see artifact.h).
 */
#include "store/artifact.h"

#include <cjson/cJSON.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

int store_artifact_add_once(store *st, const char *goal_id, const char *item_id, const char *run_id,
                            const char *type, const char *ref, const char *path, const char *hash,
                            const char *url, const struct cJSON *meta)
{
    static const char exists[] =
        "SELECT 1 FROM artifacts WHERE goal_id = ? AND type = ? AND ifnull(item_id, '') = ?"
        " AND ifnull(hash, '') = ifnull(?, '') AND ifnull(path, '') = ifnull(?, '')";
    static const char ins[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, ref, path, hash, url, meta,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
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
    found = sqlite3_step(s) == SQLITE_ROW;
    store_done(s);
    if (found)
        goto out;
    if ((rc = store_prepare(st, &s, ins)) != 0)
        goto out;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, item_id);
    store_bind_text(s, 3, run_id);
    store_bind_text(s, 4, type);
    store_bind_text(s, 5, ref);
    store_bind_text(s, 6, path);
    store_bind_text(s, 7, hash);
    store_bind_text(s, 8, url);
    store_bind_text(s, 9, mt ? mt : "{}");
    sqlite3_bind_int64(s, 10, time_now_ms());
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "artifact");
    store_done(s);
out:
    cJSON_free(mt);
    return rc;
}
