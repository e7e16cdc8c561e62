/*
 * gate_result.h - the gate_results table (one row per gate run), with
 * gate_cases and gate_baselines.
 *
 * Callback arguments are only valid during the call.
 */
#ifndef GOALD_STORE_GATE_RESULT_H
#define GOALD_STORE_GATE_RESULT_H

#include "store/store.h"

/* Call fn with the latest result of each gate of an item, by gate name
 * (passed is 0 or 1).  fn returns non-zero to stop. */
int store_gate_result_latest_by_item_each(store *st, const char *item_id,
                                          int (*fn)(const char *name, int passed, void *ctx),
                                          void *ctx);

#endif
