/*
 * recover.h - four-tier recovery of a failed run (DESIGN.md §1).
 *
 * recover_decide() is the whole policy, a pure function of the facts
 * (tested as a table); recover_after_failure() gathers the facts from the
 * ledger and applies the decision with its events:
 *   tier 1  retry the same strategy after min(base*2^(n-1), max), up to
 *           control.max_retries; three identical error signatures in a
 *           row, or context_length, skip the rest of tier 1;
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

/* After job_run() recorded the failure of j's run: decide and apply.
 * next receives the action's name. */
int recover_after_failure(struct job_ctx *j, const char *signature, char *next, size_t next_n);

#endif
