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

struct job_ctx;

/* Open an escalation of type (the reason: recovery_exhausted, auth,
 * budget, config, ask_human, deadline, ...) for j's item, or its goal when
 * the run has no item.  Moves a failed item to escalated, and the goal to
 * blocked when the item is critical (or the escalation is the goal's). */
int escalate_open(struct job_ctx *j, const char *type);

/* The actions resolve accepts for an escalation of type and scope ("item",
 * "publish" or "goal", see escalate_scope()), as a NULL-terminated list
 * (static).  Each does what its option in the packet says. */
const char *const *escalate_actions(const char *type, const char *scope);

/* The scope of an escalation: "item" when it has an item, "publish" when
 * its run was a publish run, else "goal". */
const char *escalate_scope(const char *item_id, const char *run_kind);

#endif
