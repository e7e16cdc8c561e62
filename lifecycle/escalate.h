/*
 * escalate.h - tier 4: a packet a human can decide from in one read.
 *
 * The packet: the work item; every attempt (tier, model, strategy, what
 * was tried, why it failed, its signature); the current state (artifacts,
 * passing and failing gates, budget remaining); the analysis of stage
 * `escalate` (root cause, options with pros and cons, one minimal
 * question) — or, when the model cannot be asked (the failure may be the
 * model itself), a deterministic one; the actions `goald resolve` accepts;
 * an urgency.  One open escalation per item (or goal) and reason: opening
 * it twice changes nothing.
 */
#ifndef GOALD_LIFECYCLE_ESCALATE_H
#define GOALD_LIFECYCLE_ESCALATE_H

#include <stddef.h>

#include "store/store.h"
#include "util/id.h"

struct goal;
struct work_item;
struct job_ctx;

/* What an escalation is about, borrowed from the caller: no job is
 * needed to open one (the monitor and the daemon have none). */
struct escalate_facts {
    const struct goal *goal;
    const struct work_item *item; /* NULL: the goal's escalation */
    const char *run_id;           /* NULL or "": no run */
    const char *run_kind;         /* the unit's kind (elaborate, plan, publish...); NULL or "" */
    const char *error_class;      /* NULL or "": none */
    const char *failure;          /* the cause, in words; NULL or "": none */
};

/* Open an escalation of type (the reason: recovery_exhausted, auth,
 * budget, config, ask_human, deadline, ...) about f.  Moves a failed item
 * to escalated, and the goal to blocked when the item is critical (or the
 * escalation is the goal's).  model (may be NULL) is a job whose model is
 * asked for the packet's analysis (stage escalate) when the failure is
 * not the model's own; without it the analysis is goald's deterministic
 * one.  model's error class and failure are kept across that call. */
int escalate_open_facts(store *st, const struct escalate_facts *f, struct job_ctx *model,
                        const char *type);

/* escalate_open_facts() for j's run: its item (or goal), its failure, and
 * its model. */
int escalate_open(struct job_ctx *j, const char *type);

#endif
