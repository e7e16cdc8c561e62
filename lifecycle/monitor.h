/*
 * monitor.h - stage 8: recurring goals, deadlines, and the periodic sweep
 * (budgets, retention).  Called by the daemon's cron lane (see monitor.c).
 */
#ifndef GOALD_LIFECYCLE_MONITOR_H
#define GOALD_LIFECYCLE_MONITOR_H

#include <stdint.h>

#include "store/goal.h"
#include "store/store.h"

/* Fire due triggers at now (making triggers for new templates first);
 * *fired receives how many instances were made. */
int monitor_fire_triggers(store *st, int64_t now, int *fired);

/* When the template g fires next: its trigger's time, or (no trigger yet:
 * the daemon has not seen it) the schedule's next time after now.
 * ERR_NOTFOUND for a goal that is not a template or is cancelled. */
int monitor_next_fire_at(store *st, const struct goal *g, int64_t now, int64_t *out);

/* Open a `deadline` escalation for each open goal past its deadline (once
 * per goal). */
int monitor_check_deadlines(store *st, int64_t now, int *raised);

struct monitor_sweep {
    int budget_escalations;
    int events_deleted;
    int packs_deleted;
    int runs_aborted; /* as given by the caller */
};

/* Budgets spent -> `budget` escalations; events and context packs past
 * monitor.retention_days deleted (the latest pack of each item stays);
 * event monitor.sweep with the counts, runs_aborted being how many stale
 * runs the caller (the daemon) aborted just before. */
int monitor_sweep(store *st, int64_t now, int runs_aborted, struct monitor_sweep *out);

#endif
