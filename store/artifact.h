/*
 * artifact.h - the artifacts table: what runs produced (patches, commits,
 * branches, pull requests), with a path or reference, hash and meta JSON.
 */
#ifndef GOALD_STORE_ARTIFACT_H
#define GOALD_STORE_ARTIFACT_H

#include <stdint.h>

#include "store/store.h"

/* Record a saved patch file of a run (item_id may be NULL; meta is JSON
 * text). */
int store_artifact_insert_patch(store *st, const char *goal_id, const char *item_id,
                                const char *run_id, const char *path, const char *hash,
                                const char *meta_json, int64_t now_ms);

#endif
