/*
 * artifact.h - the artifacts table: what a goal produced (commits, branch,
 * pull request, files), for the report and the demo.
 *
 * In store_artifact_each() callbacks the struct and its strings are
 * borrowed from the store and valid only during the call; fn must copy
 * what it keeps.  Nothing here is freed by the caller.
 */
#ifndef GOALD_STORE_ARTIFACT_H
#define GOALD_STORE_ARTIFACT_H

#include <stdint.h>

#include "store/store.h"

struct store_artifact {
    const char *type;
    const char *ref, *path, *hash, *url, *item_id; /* NULL when not set */
    int64_t created_at;
};

/* Call fn for each artifact of goal_id (only those of type when type is
 * not NULL), oldest first.  fn returns non-zero to stop (that value is
 * returned); a database error is ERR_DB. */
int store_artifact_each(store *st, const char *goal_id, const char *type,
                        int (*fn)(const struct store_artifact *a, void *ctx), void *ctx);

struct cJSON;

/* An artifact to record (store_artifact_add_once()); every pointer is
 * the caller's. */
struct store_artifact_new {
    const char *goal_id, *item_id, *run_id, *type;
    const char *ref, *path, *hash, *url;
    const struct cJSON *meta;
};

/* Record an artifact of goal_id (and item_id, may be NULL) once: when one
 * with the same type, item, hash and path exists, nothing changes.  ref,
 * path, hash, url may be NULL; meta NULL is stored as {}. */
int store_artifact_add_once(store *st, const struct store_artifact_new *a) GOALD_MUST_CHECK;

/* Record a saved patch file of a run (item_id may be NULL; meta is JSON
 * text). */
int store_artifact_insert_patch(store *st, const char *goal_id, const char *item_id,
                                const char *run_id, const char *path, const char *hash,
                                const char *meta_json, int64_t now_ms) GOALD_MUST_CHECK;

#endif
