/*
 * monitor.h - stage 8: recurring goals, deadlines, and the periodic sweep
 * (budgets, retention).  Called by the daemon's cron lane (see monitor.c).
 */
#ifndef GOALD_LIFECYCLE_MONITOR_H
#define GOALD_LIFECYCLE_MONITOR_H

#include <stdint.h>

#include "store/goal.h"
#include "store/store.h"
#include "util/id.h"

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

/* The goals whose jobs run on this node now (the daemon's children): their
 * worktrees are never removed, whatever their goal's status. */
struct monitor_busy {
    const char (*ids)[ID_SIZE];
    int n;
};

/* This node's worktree of goal_id (vcs.worktree_root/<goal_id>) removed
 * when the goal ended (completed or cancelled: store_goal_ended), is not
 * in busy and has no running run: the folder, never following a link out
 * of it, and its registration in the repository it belongs to (this
 * node's clone in clone mode).  *removed is 1 when it was (0: nothing
 * there, or kept).  A goal this database does not know is left alone:
 * the folder may be another database's (databases of one folder share its
 * clones, and users their worktree root). */
int monitor_worktree_drop(store *st, const char *goal_id, const struct monitor_busy *busy,
                          int *removed);

/* Every worktree of this node whose goal ended, as monitor_worktree_drop()
 * decides: the folders in the worktree root, then the registrations of
 * this node's clones (those whose folder is gone too).  *removed: how
 * many.  An error with one is logged and the others go on. */
int monitor_worktrees_sweep(store *st, const struct monitor_busy *busy, int *removed);

#endif
