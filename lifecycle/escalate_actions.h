/*
 * escalate_actions.h - the actions an escalation offers, by its type and
 * scope: what the packet lists (escalate.c) and what `goald resolve`
 * accepts (resolve.c).  The lists are static: nothing to free.
 */
#ifndef GOALD_LIFECYCLE_ESCALATE_ACTIONS_H
#define GOALD_LIFECYCLE_ESCALATE_ACTIONS_H

/* The actions resolve accepts for an escalation of type and scope ("item",
 * "publish" or "goal", see escalate_scope()), as a NULL-terminated list
 * (static).  Each does what its option in the packet says. */
const char *const *escalate_actions(const char *type, const char *scope);

/* The scope of an escalation: "item" when it has an item, "publish" when
 * its run was a publish run, else "goal". */
const char *escalate_scope(const char *item_id, const char *run_kind);

#endif
