/*
 * run.h - the runs table: one attempt at a unit of work (elaborate, plan,
 * execute, publish), its process, its end.
 *
 * Structs are the caller's; arrays returned through an out pointer are
 * malloc'd and the caller free()s them.  Writes run in the caller's
 * transaction.
 */
#ifndef GOALD_STORE_RUN_H
#define GOALD_STORE_RUN_H

#include <stddef.h>

#include "store/store.h"
#include "util/id.h"

/* What ending a run from outside (the daemon, cancel) needs to know. */
struct store_run_facts {
    char goal_id[ID_SIZE];
    char item_id[ID_SIZE]; /* "" for a goal-level unit */
    char kind[16];
    char lane[8];
    char status[16];
    int attempt;
    int timeout_s; /* 0: none recorded */
    int model_index;
};

/* ERR_NOTFOUND "run ID: not found". */
int store_run_facts_get(store *st, const char *id, struct store_run_facts *out);

/* Record why run id failed (class, signature, reason) if it is still
 * running. */
int store_run_set_failure_if_running(store *st, const char *id, const char *cls,
                                     const char *signature, const char *reason);

struct store_run_live {
    char id[ID_SIZE];
    long pid; /* 0: none recorded */
};

/* The running runs of goal_id, oldest first: *out (free(); NULL when
 * none) of *n. */
int store_run_running_of_goal(store *st, const char *goal_id, struct store_run_live **out,
                              size_t *n);

/* Record run id (if still running) as failed by a cancel: class and
 * reason "cancelled". */
int store_run_set_cancelled(store *st, const char *id);

#endif
