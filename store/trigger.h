/*
 * trigger.h - the triggers table: when a recurring goal (a template with
 * a schedule) fires next.
 *
 * Rows are copied into the caller's fixed-size structs; nothing is
 * allocated.  Writes run in the caller's transaction.
 */
#ifndef GOALD_STORE_TRIGGER_H
#define GOALD_STORE_TRIGGER_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct store_trigger_due {
    char id[ID_SIZE], goal_id[ID_SIZE];
    char schedule[256];
    int64_t next_fire_at;
};

/* Templates (not cancelled, with a schedule) that have no trigger yet, at
 * most max: their goal_id and schedule into rows (id and next_fire_at
 * are left empty). */
int store_trigger_templates_without(store *st, struct store_trigger_due *rows, int max,
                                    int *n);

/* A new enabled trigger of goal_id. */
int store_trigger_insert(store *st, const char *id, const char *goal_id, const char *schedule,
                         const char *timezone, int64_t next_fire_at, int64_t now_ms);

/* When goal_id's enabled trigger fires next: *found is 0 when it has
 * none. */
int store_trigger_next_fire_of_goal(store *st, const char *goal_id, int64_t *at, int *found);

/* The enabled triggers due at now_ms of goals not cancelled, soonest
 * first, at most max. */
int store_trigger_list_due(store *st, int64_t now_ms, struct store_trigger_due *rows, int max,
                           int *n);

/* The trigger fired (or skipped) at now_ms and fires next at next. */
int store_trigger_set_fired(store *st, const char *id, int64_t next, int64_t now_ms);

#endif
