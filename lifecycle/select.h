/*
 * select.h - stage 4a: which ready work item runs next.
 *
 * score = priority*0.6 + freshness*0.2 + dependency*0.2, each 0-100:
 * freshness grows linearly with the time the item has waited since it was
 * last updated (100 at select.freshness_full_s), dependency with how many
 * items wait on it (20 per dependent, at most 100).  Ties go to the older
 * item, then the smaller id.  Only `ready` items of `active` goals whose
 * backoff has passed are candidates, of goals with fewer items in
 * progress or in verification than goal.max_parallel_items (one at a time
 * for a goal without a repository or in clone mode: parallel items need
 * worktrees of their own, workspace.c).
 *
 * The pick does not score every candidate: it walks the groups of ready
 * items of one priority and one number of dependents (a seek each), and
 * in each the longest waiting first, up to the first that scores below
 * the group's first; the best of those is the best of all.
 */
#ifndef GOALD_LIFECYCLE_SELECT_H
#define GOALD_LIFECYCLE_SELECT_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct select_candidate {
    char id[ID_SIZE];
    char goal_id[ID_SIZE];
    int priority;
    int dependents;
    int64_t created_at;
    int64_t waiting_since;
    double score;
};

/* The score of one candidate at time now. */
double select_score(const struct select_candidate *c, int64_t now_ms);

/* The best candidate at now_ms, excluding goals listed in busy_goals (n of
 * them; the daemon's in-flight ones).  ERR_NOTFOUND when there is none. */
int select_next(store *st, int64_t now_ms, const char (*busy_goals)[ID_SIZE], int n_busy,
                struct select_candidate *out);

#endif
