/*
 * recover.h - four-tier recovery of a failed run (docs/design.md §1).
 *
 * recover_decide() is the whole policy, a pure function of the facts
 * (tested as a table); recover_after_failure() gathers the facts from the
 * ledger and applies the decision with its events:
 *   tier 1  retry the same strategy after min(base*2^(n-1), max), up to
 *           control.max_retries; three identical error signatures in a
 *           row (but for runs that died: class aborted), or
 *           context_length, skip the rest of tier 1;
 *   tier 2  fail over to the next model of the chain (one attempt each);
 *   tier 3  Plan B: the model proposes a different strategy, stored and
 *           put into the next prompt (one attempt);
 *   tier 4  escalate to a human; a non-critical item is skipped instead.
 * auth, budget and configuration failures go straight to a human.
 */
#ifndef GOALD_LIFECYCLE_RECOVER_H
#define GOALD_LIFECYCLE_RECOVER_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct job_ctx;

enum recover_action { RECOVER_RETRY, RECOVER_FAILOVER, RECOVER_PLAN_B, RECOVER_ESCALATE,
                      RECOVER_SKIP };

struct recover_facts {
    const char *error_class;
    int tier;              /* the tier of the failed run, 1-4 */
    int failures_at_tier;  /* failed runs at this tier, this one included */
    int max_retries;
    int same_signature;    /* identical signatures in a row, this one included */
    int model_index;       /* the chain position that failed */
    int nmodels;
    int critical;
    int repeats_answered;  /* the failure a human's answer was meant to fix, again */
};

struct recover_decision {
    enum recover_action action;
    int tier;          /* the tier of the next attempt (or 4) */
    int64_t backoff_ms;
    int model_index;   /* for the next attempt */
    const char *why;   /* static text for the event */
};

void recover_decide(const struct recover_facts *f, struct recover_decision *d);
const char *recover_action_name(enum recover_action a);

struct goal;
struct work_item;

/* What recovery needs to know about a failed run: facts, never a job.
 * Everything is borrowed. */
struct recover_input {
    const struct goal *goal;
    const struct work_item *item; /* NULL: a goal-level unit (elaborate, plan, publish) */
    const char *run_id;           /* the failed run */
    const char *run_kind;
    int attempt;                  /* goal-level: the unit's attempt */
    int model_index;              /* the chain position that failed */
    int nmodels;                  /* the length of the model chain */
    const char *error_class;
    const char *failure;          /* why, in words */
    int64_t retry_not_before_ms;  /* goal-level: > 0, a server said when to come back */
};

/* After the failure of in's run was recorded: decide and apply, with the
 * events.  next receives the action's name.  model (may be NULL) is the
 * job whose model Plan B and the escalation's analysis are asked of.
 * Without one (the daemon recovering a run that died) the escalation's
 * analysis is goald's own, and a Plan B is owed: the item goes to tier 3
 * and its next run asks for the strategy before it starts
 * (recover_plan_b_owed()). */
int recover_run(store *st, const struct recover_input *in, struct job_ctx *model,
                char *next, size_t next_n);

/* recover_run() for j's failed run, with j's model. */
int recover_after_failure(struct job_ctx *j, const char *signature, char *next, size_t next_n);

/* Before an execute run: when a Plan B is owed to j's item (its last run
 * died where no model could be asked), ask for it now, on its own
 * account, store it on the item (j->item->strategy too) with event
 * recovery.plan_b {asked_in_run: true}.  0 when none was owed or it was
 * given; else the job failed (job_fail()) and the run ends failed. */
int recover_plan_b_owed(struct job_ctx *j);

#endif
