/*
 * run.h - the runs table: one row per job run (elaborate, plan, execute,
 * ...), its lease, usage and outcome.
 *
 * Structs filled here are the caller's (no pointers into the store):
 * nothing to free.
 */
#ifndef GOALD_STORE_RUN_H
#define GOALD_STORE_RUN_H

#include <stdint.h>

#include "store/store.h"

/* What runs now for a goal; strings cut to their buffers, "" when
 * unknown. */
struct store_run_running {
    char id[40];
    char kind[16];
    char item_key[64];
    char item_title[256];
    int64_t started_at; /* -1 when not set */
    int turns_started;  /* its turn.started events */
};

/* The latest started run of goal_id still running: *found is 1 and *out
 * filled, or *found is 0 (and *out zeroed) when none runs. */
int store_run_latest_running(store *st, const char *goal_id, struct store_run_running *out,
                             int *found);

#endif
