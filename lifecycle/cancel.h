/*
 * cancel.h - cancelling a goal.
 */
#ifndef GOALD_LIFECYCLE_CANCEL_H
#define GOALD_LIFECYCLE_CANCEL_H

#include "store/store.h"

/* Cancel goal_id and every open work item of it (queued, ready,
 * in_progress, blocked, escalated) in one transaction, each with its
 * event, and its running runs recorded as aborted (reason "cancelled").
 * Then the jobs of those runs are stopped - SIGTERM to each job's process
 * group, SIGKILL after daemon.kill_grace_s - and waited for: when this
 * returns, no job of the goal calls a model any more.  *n_items and
 * *n_jobs (may be NULL) receive how many items were cancelled and how
 * many job processes were stopped.  The goal's worktree is then removed
 * (its branch stays).  ERR_TRANSITION when the goal is already completed
 * or cancelled. */
int lifecycle_goal_cancel(store *st, const char *goal_id, int *n_items, int *n_jobs);

#endif
