/*
 * plan.h - stage 3: a goal's work items as a DAG.
 *
 * The model answers {"work_items":[{"key","title","description","type",
 * "priority","effort","critical","depends_on":[keys]}]}.  plan_parse()
 * validates it completely before anything is stored; plan_store() inserts
 * every item first and maps dependency keys to real ids after, in one
 * transaction.
 */
#ifndef GOALD_LIFECYCLE_PLAN_H
#define GOALD_LIFECYCLE_PLAN_H

#include <stddef.h>

struct work_item;

#include "store/store.h"

struct cJSON;
struct criteria;

struct plan_item {
    char *key;
    char *title;
    char *description;
    char *type;   /* code, test, doc, refactor, analysis */
    char *effort; /* S, M, L, XL */
    int priority; /* 0-100 */
    int critical;
    char **deps; /* keys */
    size_t ndeps;
    int *criteria; /* indexes into the goal's success criteria */
    size_t ncriteria;
    int has_criteria; /* the item named its criteria (else: every one) */
};

struct plan {
    struct plan_item *items;
    size_t n;
};

/* Validate json (the model's answer) into out.  Refused (ERR_INVALID, the
 * message says why): not an object / no work_items array, no items, more
 * than max_items, a missing or wrongly typed field (named with its path,
 * e.g. "work_items[2].effort"), a duplicate key, a self-dependency, an
 * unknown dependency, a cycle (the message shows the path, e.g.
 * "cycle: wi-1 -> wi-2 -> wi-1").  On failure out is empty. */
int plan_parse(struct plan *out, const struct cJSON *json, int max_items);
void plan_release(struct plan *p);

/* The criteria assignment of a parsed plan against the goal's success
 * criteria crit (goal_view.h).  An item without `criteria`
 * serves every criterion (plans written before criteria were assigned);
 * refused (ERR_INVALID, the message names the item or the criterion): an
 * index out of range, or a criterion no item serves. */
int plan_check_criteria(const struct plan *p, const struct criteria *crit);

/* Does the stored item wi serve criterion index?  (wi->criteria NULL or
 * unreadable: every criterion.) */
int plan_item_serves(const struct work_item *wi, int index);

/* Insert the items of p for goal_id (items without dependencies `ready`,
 * the rest `queued`) and their edges, with the event plan.created, in one
 * transaction. */
int plan_store(store *st, const char *goal_id, const struct plan *p);

/* Move every queued item of goal_id whose dependencies are all done or
 * skipped to ready (each with its event).  *n (may be NULL) receives how
 * many moved. */
int plan_promote_ready(store *st, const char *goal_id, int *n);

#endif
