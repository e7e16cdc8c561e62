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

#include <stddef.h>
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
    char *criteria; /* JSON array of indexes into the goal's success
                       criteria the item serves; NULL: every one */
    int position;   /* its place in the plan, from 1; 0: planned before
                       places were kept */
};

/* Insert wi (id, goal_id, key, title and status must be set; timestamps
 * are set here).  Runs in the caller's transaction. */
int store_item_insert(store *st, struct work_item *wi) GOALD_MUST_CHECK;

/* Add the edge item_id -> depends_on_id with a condition (NULL:
 * "done_or_skipped"). */
int store_item_dep_add(store *st, const char *item_id, const char *depends_on_id,
                       const char *condition);

/* Call fn with the key of each item item_id depends on, by key; fn
 * returns non-zero to stop (that value is returned). */
int store_item_dep_keys_each(store *st, const char *item_id,
                             int (*fn)(const char *key, void *ctx), void *ctx);

int store_item_get(store *st, const char *id, struct work_item **out);
void store_item_free(struct work_item *wi);

/* The items of a goal in creation order. */
int store_item_each(store *st, const char *goal_id,
                    int (*fn)(const struct work_item *wi, void *ctx), void *ctx);

/* Effort points: S=1, M=3, L=5, XL=8; 0 for anything else. */
int item_effort_points(const char *effort);

/* Call fn once per (effort, status) of goal_id's items with how many
 * items have them (status is never NULL, effort may be); fn returns
 * non-zero to stop (that value is returned). */
int store_item_count_by_effort_status(store *st, const char *goal_id,
                                      int (*fn)(const char *effort, const char *status,
                                                int64_t n, void *ctx),
                                      void *ctx);

/* The item of goal_id with key (free with store_item_free()).
 * ERR_NOTFOUND when the goal has none. */
int store_item_get_by_key(store *st, const char *goal_id, const char *key,
                          struct work_item **out);

/* How many items goal_id has (*total) and how many of them are done or
 * skipped (*finished). */
int store_item_count_finished(store *st, const char *goal_id, int *total, int *finished);

/* How many items goal_id has (*total) and how many are done with their
 * gates passing (*verified). */
int store_item_count_done_verified(store *st, const char *goal_id, int *total, int *verified);

/* Set the item's summary (the model's, at completion; NULL clears it). */
int store_item_set_summary(store *st, const char *id, const char *summary);

/* Set the item's evidence flags: verified 1 (gates passed), 0
 * (unverified), below 0 stored as NULL (unknown); commit_sha may be NULL. */
int store_item_set_verified(store *st, const char *id, int verified, const char *commit_sha);

/* Set the item's open question for a human (and updated_at to now). */
int store_item_set_question(store *st, const char *id, const char *question);

/* *n: how many other items of goal_id are still to run (queued, ready,
 * in_progress, verify, blocked). */
int store_item_count_unfinished_others(store *st, const char *goal_id, const char *except_id,
                                       int *n);

/* *n: how many other items of goal_id run now or may start (ready,
 * in_progress, verify). */
int store_item_count_live_others(store *st, const char *goal_id, const char *except_id,
                                    int *n);

/* One more attempt of the item (a claim). */
int store_item_attempts_inc(store *st, const char *id);

/* An item's status and goal, for transitions: *found is 0 when absent. */
int store_item_status_get(store *st, const char *id, int *found, char status[32],
                          char goal_id[ID_SIZE]);

/* Move an item from `from` to `to` (updated_at = now; started_at on the
 * first in_progress; ended_at when terminal); *changed is 0 when it was
 * no longer `from`. */
int store_item_status_set(store *st, const char *id, const char *from, const char *to,
                          int terminal, int64_t now_ms, int *changed);

/* The queued items of a goal whose dependencies are met (done, or skipped
 * where the edge allows it), in creation order: *out is a malloc'd array
 * of *n ids (free(); NULL when none). */
int store_item_ids_promotable(store *st, const char *goal_id, char (**out)[ID_SIZE], size_t *n);

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

/* *repeats = 1 when id has a human's input and its latest execute run
 * since the human's resolution failed with the signature of its latest
 * failed one before it (the answer did not help), else 0. */
int store_item_repeats_answered(store *st, const char *id, int *repeats);

/* The item's next run gets timeout_s. */
int store_item_set_timeout(store *st, const char *id, int timeout_s);

/* Is a Plan B owed to the item?  *owed is 1 when it is at tier 3 and its
 * last recovery.plan_b event is one recovery left pending (a run that
 * died, recovered where no model could be asked); then cls and cause
 * (may be NULL) receive the failure it is to answer. */
int store_item_plan_b_owed(store *st, const char *id, int *owed, char *cls, size_t cls_n,
                           char **cause);

/* A work item held (in_progress or verify) while no run of its goal is
 * running, with its latest run: what a job leaves that died between its
 * run's end and that run's recovery. */
struct store_item_held {
    char item_id[ID_SIZE];
    char run_id[ID_SIZE]; /* its latest run ("" when it has none) */
    long pid;             /* that run's process (0 when none recorded) */
    char node_id[STORE_NODE_ID_MAX];
    int64_t ended_at; /* when that run ended (0 when it has not) */
};

/* Every such item: *out a malloc'd array of *n (free(); NULL when none). */
int store_item_list_held_idle(store *st, struct store_item_held **out, size_t *n);

/* A running execute run of an item that comes before another in its
 * goal's plan. */
struct store_run_ahead {
    char run_id[ID_SIZE];
    char item_key[64]; /* cut at 63 bytes */
    long pid;          /* 0 when none recorded */
    char node_id[STORE_NODE_ID_MAX];
    int64_t lease_until; /* 0 when not set */
};

/* The running execute runs of goal_id's items placed before position in
 * its plan, at most max into rows (*n how many). */
int store_item_runs_ahead(store *st, const char *goal_id, int position,
                          struct store_run_ahead *rows, int max, int *n);

#endif
