/*
 * escalation.h - the escalations and decisions tables.
 *
 * decisions: what goald decided and why (verification records, evidence
 * per criterion, review findings, the final check), one JSON data object
 * each.  Arguments are borrowed.
 */
#ifndef GOALD_STORE_ESCALATION_H
#define GOALD_STORE_ESCALATION_H

#include <stddef.h>

#include "store/store.h"

struct cJSON;

/* Append a decision (created_at is now).  item_id, run_id, aspect,
 * severity and note may be NULL; data NULL is stored as {}. */
int store_decision_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                       const char *kind, const char *aspect, const char *severity, const char *note,
                       const struct cJSON *data);

/* The baseline of goal_id's first "verification" decision that has one
 * (the goal's starting commit) into out (n bytes), or "" when there is
 * none. */
int store_decision_first_verification_baseline(store *st, const char *goal_id, char *out, size_t n);

#endif
