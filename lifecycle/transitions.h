/*
 * transitions.h - the state machines of docs/design.md §2, as one table.
 *
 * Every status write of a goal, work item or run goes through
 * transition_apply(): it checks the move against the table and writes the
 * new status and its event in one transaction (a savepoint when the caller
 * already holds one).  A forbidden move returns ERR_TRANSITION and writes
 * nothing.
 */
#ifndef GOALD_LIFECYCLE_TRANSITIONS_H
#define GOALD_LIFECYCLE_TRANSITIONS_H

#include "store/store.h"

struct cJSON;

enum entity_kind { ENTITY_GOAL, ENTITY_ITEM, ENTITY_RUN };

struct transition {
    enum entity_kind kind;
    const char *from;
    const char *to;
};

extern const struct transition transitions[];
extern const int transitions_count;

/* 1 when from -> to is in the table, else 0. */
int transition_allowed(enum entity_kind kind, const char *from, const char *to);

/* 1 when status is a valid status of kind. */
int transition_status_valid(enum entity_kind kind, const char *status);

const char *entity_name(enum entity_kind kind); /* "goal", "work_item", "run" */

/* Move entity id to status `to`.  When expect_from is not NULL the current
 * status must equal it (ERR_TRANSITION otherwise).  Writes the event
 * "<entity>.<to>" with payload {"from","to"} merged with extra (borrowed,
 * may be NULL).  Sets started_at on the first move into active or
 * in_progress and ended_at on a terminal status. */
int transition_apply(store *st, enum entity_kind kind, const char *id, const char *to,
                     const char *expect_from, const struct cJSON *extra);

#endif
