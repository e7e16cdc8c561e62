/*
 * escalation.h - the escalations table (questions and decisions for a
 * human).
 */
#ifndef GOALD_STORE_ESCALATION_H
#define GOALD_STORE_ESCALATION_H

#include <stdint.h>

#include "store/store.h"

/* How many escalations are open. */
int store_escalation_count_open(store *st, int64_t *out);

/* Close the open escalations of a goal that ended, by the system, with
 * reason: fn is called for each one closed (id, type), in creation order,
 * after its row was updated; fn returns non-zero to stop. */
int store_escalation_close_by_system(store *st, const char *goal_id, const char *reason,
                                     int64_t now_ms,
                                     int (*fn)(const char *id, const char *type, void *ctx),
                                     void *ctx);

#endif
