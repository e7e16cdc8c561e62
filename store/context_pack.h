/*
 * context_pack.h - the context_packs table: where a work item's runs left
 * off (built by lifecycle/context.c).
 *
 * store_context_pack_latest() returns malloc'd text: free() it.
 */
#ifndef GOALD_STORE_CONTEXT_PACK_H
#define GOALD_STORE_CONTEXT_PACK_H

#include <stdint.h>

#include "store/store.h"

/* Store a pack (JSON text) of an item after run_id. */
int store_context_pack_insert(store *st, const char *goal_id, const char *item_id,
                              const char *run_id, const char *pack_json,
                              int64_t now_ms) GOALD_MUST_CHECK;

/* The latest pack of an item (caller frees), *out NULL when none. */
int store_context_pack_latest(store *st, const char *item_id, char **out);


/* Retention: delete the packs created before cutoff_ms but the latest of
 * each item; *deleted receives how many went. */
int store_context_pack_delete_before(store *st, int64_t cutoff_ms, int *deleted);

#endif
