/*
 * run.h - the runs table (one attempt of a stage on a goal or item).
 *
 * Ids come back in caller-owned char[ID_SIZE] buffers; nothing here
 * allocates for the caller.
 */
#ifndef GOALD_STORE_RUN_H
#define GOALD_STORE_RUN_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

/* The goal and item of run run_id: each "" when the column is NULL.
 * ERR_NOTFOUND when there is no such run. */
int store_run_get_goal_item(store *st, const char *run_id, char goal_id[ID_SIZE],
                            char item_id[ID_SIZE]);

/* Remember the model (and its provider) that answered run_id last. */
int store_run_set_model(store *st, const char *run_id, const char *model, const char *provider);

/* Add a model call's usage to run_id's counters; goal_id_out (may be
 * NULL) receives the run's goal, "" when the run is unknown. */
int store_run_add_usage(store *st, const char *run_id, int64_t tokens_in, int64_t tokens_cached,
                        int64_t tokens_out, double cost_usd, char goal_id_out[ID_SIZE]);

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

/* The latest finished, unsuccessful run of item_id other than
 * except_run_id that recorded a failure reason: *error_class and *reason
 * malloc'd (*error_class may be NULL), or both NULL when there is none. */
int store_run_last_failure(store *st, const char *item_id, const char *except_run_id,
                           char **error_class, char **reason);

#endif
