/*
 * artifact.h - the artifacts table: what a goal left behind (commits,
 * files, test results, patches, the branch, the pull request).
 * Arguments are borrowed.
 */
#ifndef GOALD_STORE_ARTIFACT_H
#define GOALD_STORE_ARTIFACT_H

#include "store/store.h"

struct cJSON;

/* Record an artifact of goal_id (and item_id, may be NULL) once: when one
 * with the same type, item, hash and path exists, nothing changes.  ref,
 * path, hash, url may be NULL; meta NULL is stored as {}. */
int store_artifact_add_once(store *st, const char *goal_id, const char *item_id, const char *run_id,
                            const char *type, const char *ref, const char *path, const char *hash,
                            const char *url, const struct cJSON *meta);

#endif
