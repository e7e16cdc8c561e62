/*
 * resolve.h - a human's answer to an escalation (see resolve.c).
 */
#ifndef GOALD_LIFECYCLE_RESOLVE_H
#define GOALD_LIFECYCLE_RESOLVE_H

#include "store/store.h"
#include "util/id.h"

struct resolve_result {
    char goal_id[ID_SIZE];
    char goal_status[16]; /* after the resolution */
};

/* Apply action (retry, alternative, skip, increase_budget,
 * complete_partial, pause) with input (may be NULL) to escalation esc_id.
 * ERR_INVALID names what is wrong with the action or input (and the
 * actions the escalation accepts); ERR_TRANSITION when it is already
 * resolved.  Nothing is written on error. */
int lifecycle_resolve(store *st, const char *esc_id, const char *action, const char *input,
                      struct resolve_result *out);

/* The system closes the open escalations of type (of goal_id, or of every
 * goal when NULL) because their cause is gone (reason, e.g. "the model
 * configuration changed"): each is resolved as a retry (resolution
 * "system", resolution_input reason, event escalation.closed) and its
 * goal goes on when nothing else holds it.  Only the model's: never the
 * publish unit's (a forge refusing its token, a hung push); with
 * goal_only, only goal-level ones (an item's timeout is the item's). */
int resolve_by_system(store *st, const char *goal_id, const char *type, int goal_only,
                      const char *reason);

#endif
