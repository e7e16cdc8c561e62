/*
 * item.h - the work_items and work_item_deps tables.
 *
 * A struct work_item from store_item_get() owns its strings
 * (store_item_free() releases them and the struct; accepts NULL).  In
 * store_item_each() callbacks the struct and its strings are borrowed and
 * valid only during the call.
 */
#ifndef GOALD_STORE_ITEM_H
#define GOALD_STORE_ITEM_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct work_item {
    char id[ID_SIZE];
    char goal_id[ID_SIZE];
    char *key;
    char *title;
    char *description;
    char *type;
    char *status;
    int priority;
    char *effort; /* S, M, L, XL */
    int critical;
    int attempts;
    int tier;
    int max_retries;
    int model_index;
    int64_t next_attempt_at;
    int timeout_s; /* 0: the lane default */
    char *strategy;
    char *human_input;
    char *question;
    char *summary;
    int verified; /* -1 unknown, 1 gates passed, 0 unverified */
    char *commit_sha;
    int64_t created_at, updated_at;
    int64_t started_at, ended_at; /* -1: not yet */
};

/* Insert wi (id, goal_id, key, title and status must be set; timestamps
 * are set here).  Runs in the caller's transaction. */
int store_item_insert(store *st, struct work_item *wi);

/* Add the edge item_id -> depends_on_id with a condition (NULL:
 * "done_or_skipped"). */
int store_item_dep_add(store *st, const char *item_id, const char *depends_on_id,
                       const char *condition);

int store_item_get(store *st, const char *id, struct work_item **out);
void store_item_free(struct work_item *wi);

/* The items of a goal in creation order. */
int store_item_each(store *st, const char *goal_id,
                    int (*fn)(const struct work_item *wi, void *ctx), void *ctx);

/* Effort points: S=1, M=3, L=5, XL=8; 0 for anything else. */
int item_effort_points(const char *effort);

/* The goal's items that wait (queued, ready, blocked, escalated), by id.
 * *out is malloc'd (free(); NULL when none). */
int store_item_ids_waiting(store *st, const char *goal_id, char (**out)[ID_SIZE], size_t *n);

/* The goal's items not finished (queued, ready, in_progress, blocked,
 * escalated), oldest first.  *out is malloc'd (free(); NULL when none). */
int store_item_ids_unfinished(store *st, const char *goal_id, char (**out)[ID_SIZE],
                              size_t *n);

/* A human's answer: the item's recovery starts over (tier 1, epoch now,
 * no question), with input (may be NULL) as its strategy when alternative
 * is set, else as its human input. */
int store_item_recovery_restart(store *st, const char *id, const char *input, int alternative,
                                int64_t now_ms);

/* Recovery's decision for the item: tier, chain position, when it may be
 * claimed, and a new strategy (NULL: it keeps its own). */
int store_item_set_recovery(store *st, const char *id, int tier, int model_index,
                            int64_t next_attempt_at, const char *strategy);

/* The facts recovery counts: *failures, the item's failed execute runs at
 * tier since its recovery epoch (1 when unknown); *same, how many of its
 * last finished execute runs in a row share the last one's (non-empty)
 * error signature. */
int store_item_recovery_counts(store *st, const char *id, int tier, int *failures, int *same);

/* The item's next run gets timeout_s. */
int store_item_set_timeout(store *st, const char *id, int timeout_s);

/* Is a Plan B owed to the item?  *owed is 1 when it is at tier 3 and its
 * last recovery.plan_b event is one recovery left pending (a run that
 * died, recovered where no model could be asked); then cls and cause
 * (may be NULL) receive the failure it is to answer. */
int store_item_plan_b_owed(store *st, const char *id, int *owed, char *cls, size_t cls_n,
                           char **cause);

#endif
