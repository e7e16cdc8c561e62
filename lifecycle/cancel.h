/*
 * cancel.h - cancelling a goal.
 */
#ifndef GOALD_LIFECYCLE_CANCEL_H
#define GOALD_LIFECYCLE_CANCEL_H

#include "store/store.h"

/* Cancel goal_id and every open work item of it (queued, ready,
 * in_progress, blocked, escalated) in one transaction, each with its
 * event.  *n_items (may be NULL) receives how many items were cancelled.
 * The goal's worktree is then removed (its branch stays).
 * ERR_TRANSITION when the goal is already completed or cancelled. */
int lifecycle_goal_cancel(store *st, const char *goal_id, int *n_items);

#endif
