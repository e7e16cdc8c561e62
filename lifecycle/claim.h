/*
 * claim.h - taking the next unit of work for a lane, atomically.
 *
 * A unit is one run: `elaborate` (a queued goal), `plan` (an active,
 * elaborated goal without items) in the plan lane; `execute` (the best
 * ready item, see select.h) in the work lane.  Claiming writes the run row
 * (status running, attempt, tier, model index, the claiming node and its
 * lease) and moves the item to in_progress, with events, in one
 * transaction, so two claimers - two lanes, or two nodes sharing a
 * PostgreSQL queue - never get the same unit.  Nothing is claimed while a circuit breaker is open.
 */
#ifndef GOALD_LIFECYCLE_CLAIM_H
#define GOALD_LIFECYCLE_CLAIM_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct claim {
    char run_id[ID_SIZE];
    char goal_id[ID_SIZE];
    char item_id[ID_SIZE]; /* "" for plan-lane units */
    char kind[16];         /* elaborate, plan, execute */
    char lane[8];          /* plan, work */
    int attempt;
    int timeout_s;
};

/* Who claims and what it runs already (NULL: nobody in particular). */
struct claim_scope {
    const char *node_id;               /* written on the run (store_node_id) */
    const char (*busy_goals)[ID_SIZE]; /* goals the claimer runs now: skipped */
    int n_busy;
    /* the claimer's own cap for the lane (0: none), counted in the claim's
     * transaction over the runs the database says are running on cap_node
     * (NULL: on every node - one daemon per SQLite file): a run whose
     * job died while its end could not be recorded, or a job of an earlier
     * daemon, holds its slot until it is recovered */
    int lane_cap;
    const char *cap_node;
};

/* now_ms for "the clock, read once the claim holds the write lock": the
 * run's created_at then orders with the ends of the runs of every node. */
#define CLAIM_NOW 0

/* Claim the next unit of lane ("plan" or "work") at now_ms (or CLAIM_NOW)
 * for scope.
 * ERR_NOTFOUND when nothing is runnable, when the lane's global cap
 * (daemon.global_plan_cap, daemon.global_work_cap: running runs of every
 * node, counted in the claim's transaction) or scope's lane_cap is
 * reached, or when a breaker blocks (*blocked_by, may be NULL, names its
 * class). */
int claim_next(store *st, const char *lane, int64_t now_ms, const struct claim_scope *scope,
               struct claim *out, char *blocked_by, size_t blocked_n);

/* Read a run's claim back (for `goald job RUN_ID`). */
int claim_load(store *st, const char *run_id, struct claim *out);

#endif
