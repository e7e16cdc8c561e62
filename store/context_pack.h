/*
 * context_pack.h - the context_packs table: where an item's runs left
 * off, for the next one.
 */
#ifndef GOALD_STORE_CONTEXT_PACK_H
#define GOALD_STORE_CONTEXT_PACK_H

#include <stdint.h>

#include "store/store.h"

/* Store the pack (JSON text) written after run_id of item_id. */
int store_context_pack_insert(store *st, const char *goal_id, const char *item_id,
                              const char *run_id, const char *pack_json, int64_t now_ms);

/* Retention: delete the packs created before cutoff_ms but the latest of
 * each item; *deleted receives how many went. */
int store_context_pack_delete_before(store *st, int64_t cutoff_ms, int *deleted);

#endif
