/*
 * abort.h - ending a run whose process did not: it died (crash, kill -9,
 * the daemon's own death) or ran past its timeout and was killed.
 *
 * The run becomes `aborted` or `timeout` with its reason and event, and
 * recovery runs as for any failed run, given the facts (the run's row, its
 * goal and item, the model chain's length) - without a model (the daemon
 * never calls one): a Plan B is left owed to the item's next run, which
 * asks for it first (recover_plan_b_owed()), and an escalation's analysis
 * is goald's deterministic one.  A timed-out item's next run gets twice
 * the timeout.
 */
#ifndef GOALD_LIFECYCLE_ABORT_H
#define GOALD_LIFECYCLE_ABORT_H

#include "store/store.h"

/* status: "aborted" or "timeout".  ERR_TRANSITION when the run is no
 * longer running (it finished on its own meanwhile): nothing is done. */
int lifecycle_abort_run(store *st, const char *run_id, const char *status, const char *reason);

#endif
