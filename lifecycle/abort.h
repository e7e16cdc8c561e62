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

/* After the job of run_id died (reason: how) with its run already ended:
 * if the run's item is still held (in_progress or verify) and no run of
 * its goal is running, the job died after writing the run's end and
 * before recovery moved the item (a kill -9 during a Plan B call), and
 * nothing else would ever move it: recovery runs now, as for an aborted
 * run.  ERR_TRANSITION when the run is still running (lifecycle_abort_run
 * is the call), ERR_NOTFOUND when nothing was left held. */
int lifecycle_recover_stranded(store *st, const char *run_id, const char *reason);

#endif
