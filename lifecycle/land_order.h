/*
 * land_order.h - items of a goal running at the same time land on the
 * goal branch in the order of the plan.
 *
 * An item in a worktree of its own (lifecycle/workspace.c) that the model
 * completed waits, before its verification, while an item placed before
 * it in the plan runs: so the earlier one lands first, the later one is
 * verified on the head that holds it, and when the two conflict or break
 * a gate together it is the later one, as the plan orders them, that runs
 * again.  Only items running now are waited for (a ready item waiting for
 * a lane, a backoff or a human is not): the wait is the time until the
 * earlier item's run ends, which the goal spends anyway.
 */
#ifndef GOALD_LIFECYCLE_LAND_ORDER_H
#define GOALD_LIFECYCLE_LAND_ORDER_H

struct job_ctx;
struct workspace;

/* Wait, as above, renewing the run's lease, polling the store.  A run
 * ahead that is not alive (its process on this node is gone, or its lease
 * ran out) is not waited for: the lease sweep recovers it.  The wait
 * ends, and the item goes on landing in the order it finished, after a
 * third of the run's remaining time, with an "item.land_order" event
 * saying so; an event says whom it waited for.  0, or ERR_FAIL after
 * job_fail() when the run is no longer live (cancelled). */
int land_order_wait(struct job_ctx *j, const struct workspace *ws);

#endif
