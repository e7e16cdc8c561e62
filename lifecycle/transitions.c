#include "lifecycle/transitions.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/escalation.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

const struct transition transitions[] = {
    {ENTITY_GOAL, "queued", "active"},
    {ENTITY_GOAL, "queued", "cancelled"},
    {ENTITY_GOAL, "queued", "blocked"}, /* a configuration error before elaboration */
    {ENTITY_GOAL, "active", "blocked"},
    {ENTITY_GOAL, "active", "completed"},
    {ENTITY_GOAL, "active", "cancelled"},
    {ENTITY_GOAL, "blocked", "active"},
    {ENTITY_GOAL, "blocked", "queued"}, /* unblocked before its elaboration */
    {ENTITY_GOAL, "blocked", "cancelled"},

    {ENTITY_ITEM, "queued", "ready"},
    {ENTITY_ITEM, "queued", "cancelled"},
    {ENTITY_ITEM, "ready", "in_progress"},
    {ENTITY_ITEM, "ready", "cancelled"},
    {ENTITY_ITEM, "in_progress", "verify"},
    {ENTITY_ITEM, "in_progress", "failed"},
    {ENTITY_ITEM, "in_progress", "blocked"},
    {ENTITY_ITEM, "in_progress", "cancelled"},
    {ENTITY_ITEM, "verify", "done"},
    {ENTITY_ITEM, "verify", "failed"},
    {ENTITY_ITEM, "failed", "ready"},
    {ENTITY_ITEM, "failed", "escalated"},
    {ENTITY_ITEM, "failed", "skipped"},
    {ENTITY_ITEM, "blocked", "ready"},
    {ENTITY_ITEM, "blocked", "cancelled"},
    {ENTITY_ITEM, "escalated", "ready"},
    {ENTITY_ITEM, "escalated", "skipped"},
    {ENTITY_ITEM, "escalated", "cancelled"},

    {ENTITY_RUN, "running", "success"},
    {ENTITY_RUN, "running", "failed"},
    {ENTITY_RUN, "running", "timeout"},
    {ENTITY_RUN, "running", "aborted"},
};
const int transitions_count = (int)(sizeof(transitions) / sizeof(transitions[0]));

static const char *const goal_states[] = {"queued", "active", "blocked", "completed",
                                          "cancelled", NULL};
static const char *const item_states[] = {"queued", "ready", "in_progress", "verify",
                                          "done", "failed", "blocked", "escalated",
                                          "skipped", "cancelled", NULL};
static const char *const run_states[] = {"running", "success", "failed", "timeout", "aborted",
                                         NULL};

const char *entity_name(enum entity_kind kind)
{
    switch (kind) {
    case ENTITY_GOAL: return "goal";
    case ENTITY_ITEM: return "work_item";
    case ENTITY_RUN: return "run";
    }
    return "?";
}

int transition_status_valid(enum entity_kind kind, const char *status)
{
    const char *const *s = kind == ENTITY_GOAL ? goal_states
                           : kind == ENTITY_ITEM ? item_states
                                                 : run_states;

    for (; *s; s++)
        if (!strcmp(*s, status))
            return 1;
    return 0;
}

int transition_allowed(enum entity_kind kind, const char *from, const char *to)
{
    for (int i = 0; i < transitions_count; i++)
        if (transitions[i].kind == kind && !strcmp(transitions[i].from, from) &&
            !strcmp(transitions[i].to, to))
            return 1;
    return 0;
}

static int is_terminal(enum entity_kind kind, const char *s)
{
    switch (kind) {
    case ENTITY_GOAL: return !strcmp(s, "completed") || !strcmp(s, "cancelled");
    case ENTITY_ITEM:
        return !strcmp(s, "done") || !strcmp(s, "skipped") || !strcmp(s, "cancelled");
    case ENTITY_RUN: return strcmp(s, "running") != 0;
    }
    return 0;
}

struct closing {
    store *st;
    const char *goal_id, *reason;
};

static int closed_event(const char *id, const char *type, void *ctx)
{
    struct closing *c = ctx;
    cJSON *p = cJSON_CreateObject();
    int rc;

    xcheck(p);
    cJSON_AddStringToObject(p, "escalation_id", id);
    cJSON_AddStringToObject(p, "type", type);
    cJSON_AddStringToObject(p, "by", "system");
    cJSON_AddStringToObject(p, "reason", c->reason);
    rc = store_event_add(c->st, c->goal_id, NULL, NULL, "escalation.closed", p, NULL);
    cJSON_Delete(p);
    return rc;
}

/* A goal that ended leaves nothing to decide: its open escalations are
 * closed by the system, with the reason (event escalation.closed each). */
static int close_escalations(store *st, const char *goal_id, const char *to, int64_t now)
{
    char reason[64];
    struct closing c = {st, goal_id, reason};

    snprintf(reason, sizeof(reason), "the goal was %s", to); /* truncation: ok, a message */
    return store_escalation_close_by_system(st, goal_id, reason, now, closed_event, &c);
}

/* The ids an entity's row names, and its status. */
struct row {
    char from[32];
    char goal_id[ID_SIZE], item_id[ID_SIZE], run_id[ID_SIZE];
};

/* Read the row of (kind, id); ERR_NOTFOUND when absent. */
static int row_read(store *st, enum entity_kind kind, const char *id, struct row *r)
{
    int rc = 0, found = 0;

    memset(r, 0, sizeof(*r));
    switch (kind) {
    case ENTITY_GOAL:
        rc = store_goal_status_get(st, id, &found, r->from);
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(r->goal_id, sizeof(r->goal_id), "%s", id);
        break;
    case ENTITY_ITEM:
        rc = store_item_status_get(st, id, &found, r->from, r->goal_id);
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(r->item_id, sizeof(r->item_id), "%s", id);
        break;
    case ENTITY_RUN:
        rc = store_run_status_get(st, id, &found, r->from, r->goal_id, r->item_id);
        snprintf(r->run_id, sizeof(r->run_id), "%s", id); /* truncation: ok, an id, ID_SIZE both */
        break;
    }
    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "%s %s: not found", entity_name(kind), id);
    return rc;
}

/* Write the move from r->from to `to`; ERR_TRANSITION when the row
 * changed since it was read. */
static int row_write(store *st, enum entity_kind kind, const char *id, const char *from,
                     const char *to, int64_t now)
{
    int rc = 0, changed = 0, term = is_terminal(kind, to);

    switch (kind) {
    case ENTITY_GOAL: rc = store_goal_status_set(st, id, from, to, term, now, &changed); break;
    case ENTITY_ITEM: rc = store_item_status_set(st, id, from, to, term, now, &changed); break;
    case ENTITY_RUN: rc = store_run_status_set(st, id, from, to, term, now, &changed); break;
    }
    if (rc == 0 && !changed)
        rc = err_set(ERR_TRANSITION, "%s %s changed under us", entity_name(kind), id);
    return rc;
}

/* The event of the move: TYPE.TO with extra and from/to. */
static int row_event(store *st, enum entity_kind kind, const struct row *r, const char *to,
                     const cJSON *extra)
{
    cJSON *payload = extra ? cJSON_Duplicate(extra, 1) : cJSON_CreateObject();
    char type[64];
    int rc;

    xcheck(payload);
    cJSON_DeleteItemFromObjectCaseSensitive(payload, "from");
    cJSON_DeleteItemFromObjectCaseSensitive(payload, "to");
    cJSON_AddStringToObject(payload, "from", r->from);
    cJSON_AddStringToObject(payload, "to", to);
    /* truncation: ok, an entity and a status fit 64 bytes */
    snprintf(type, sizeof(type), "%s.%s", entity_name(kind), to);
    rc = store_event_add(st, r->goal_id[0] ? r->goal_id : NULL, r->item_id[0] ? r->item_id : NULL,
                         r->run_id[0] ? r->run_id : NULL, type, payload, NULL);
    cJSON_Delete(payload);
    return rc;
}

int transition_apply(store *st, enum entity_kind kind, const char *id, const char *to,
                     const char *expect_from, const cJSON *extra)
{
    struct row r;
    int rc;
    int64_t now = time_now_ms();

    if (!transition_status_valid(kind, to))
        return err_set(ERR_TRANSITION, "%s %s: unknown status \"%s\"", entity_name(kind), id, to);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = row_read(st, kind, id, &r)) != 0)
        goto out;
    if (expect_from && strcmp(r.from, expect_from) != 0) {
        rc = err_set(ERR_TRANSITION, "%s %s is %s, not %s", entity_name(kind), id, r.from,
                     expect_from);
        goto out;
    }
    if (!transition_allowed(kind, r.from, to)) {
        rc = err_set(ERR_TRANSITION, "%s %s: cannot go from %s to %s", entity_name(kind), id,
                     r.from, to);
        goto out;
    }
    if ((rc = row_write(st, kind, id, r.from, to, now)) != 0 ||
        (rc = row_event(st, kind, &r, to, extra)) != 0)
        goto out;
    if (kind == ENTITY_GOAL && is_terminal(kind, to))
        rc = close_escalations(st, id, to, now);
out:
    return store_tx_end(st, rc);
}
