#include "lifecycle/transitions.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/event.h"
#include "util/err.h"
#include "util/timeutil.h"

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

/* A goal that ended leaves nothing to decide: its open escalations are
 * closed by the system, with the reason (event escalation.closed each). */
static int close_escalations(store *st, const char *goal_id, const char *to, int64_t now)
{
    static const char sel[] = "SELECT id, type FROM escalations WHERE goal_id = ?"
                              " AND status = 'open' ORDER BY created_at, id";
    static const char upd[] = "UPDATE escalations SET status = 'resolved', resolution = 'system',"
                              " resolution_input = ?, resolved_at = ? WHERE id = ?";
    char reason[64];
    sqlite3_stmt *s, *u;
    int rc = store_prepare(st, &s, sel);

    if (rc)
        return rc;
    snprintf(reason, sizeof(reason), "the goal was %s", to);
    store_bind_text(s, 1, goal_id);
    while (rc == 0 && sqlite3_step(s) == SQLITE_ROW) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "escalation_id", (const char *)sqlite3_column_text(s, 0));
        cJSON_AddStringToObject(p, "type", (const char *)sqlite3_column_text(s, 1));
        cJSON_AddStringToObject(p, "by", "system");
        cJSON_AddStringToObject(p, "reason", reason);
        if ((rc = store_prepare(st, &u, upd)) == 0) {
            store_bind_text(u, 1, reason);
            sqlite3_bind_int64(u, 2, now);
            store_bind_text(u, 3, (const char *)sqlite3_column_text(s, 0));
            rc = sqlite3_step(u) == SQLITE_DONE ? 0 : store_err(st, "escalation");
            store_done(u);
        }
        if (rc == 0)
            rc = store_event_add(st, goal_id, NULL, NULL, "escalation.closed", p, NULL);
        cJSON_Delete(p);
    }
    store_done(s);
    return rc;
}

int transition_apply(store *st, enum entity_kind kind, const char *id, const char *to,
                     const char *expect_from, const cJSON *extra)
{
    static const char *const sel[] = {
        "SELECT status, id, NULL, NULL FROM goals WHERE id = ?",
        "SELECT status, goal_id, id, NULL FROM work_items WHERE id = ?",
        "SELECT status, goal_id, item_id, id FROM runs WHERE id = ?",
    };
    static const char *const upd[] = {
        "UPDATE goals SET status = ?1, updated_at = ?2,"
        " started_at = CASE WHEN ?1 = 'active' THEN ifnull(started_at, ?2) ELSE started_at END,"
        " ended_at = CASE WHEN ?3 THEN ?2 ELSE ended_at END WHERE id = ?4 AND status = ?5",
        "UPDATE work_items SET status = ?1, updated_at = ?2,"
        " started_at = CASE WHEN ?1 = 'in_progress' THEN ifnull(started_at, ?2)"
        " ELSE started_at END,"
        " ended_at = CASE WHEN ?3 THEN ?2 ELSE ended_at END WHERE id = ?4 AND status = ?5",
        "UPDATE runs SET status = ?1, ended_at = CASE WHEN ?3 THEN ?2 ELSE ended_at END"
        " WHERE id = ?4 AND status = ?5",
    };
    char from[32] = "";
    char goal_id[64] = "", item_id[64] = "", run_id[64] = "";
    char type[64];
    sqlite3_stmt *s = NULL;
    cJSON *payload = NULL;
    int rc;
    int64_t now = time_now_ms();

    if (!transition_status_valid(kind, to))
        return err_set(ERR_TRANSITION, "%s %s: unknown status \"%s\"", entity_name(kind), id, to);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_prepare(st, &s, sel[kind])) != 0)
        goto fail;
    store_bind_text(s, 1, id);
    switch (sqlite3_step(s)) {
    case SQLITE_ROW: {
        const char *c;
        snprintf(from, sizeof(from), "%s", (const char *)sqlite3_column_text(s, 0));
        if ((c = (const char *)sqlite3_column_text(s, 1)))
            snprintf(goal_id, sizeof(goal_id), "%s", c);
        if ((c = (const char *)sqlite3_column_text(s, 2)))
            snprintf(item_id, sizeof(item_id), "%s", c);
        if ((c = (const char *)sqlite3_column_text(s, 3)))
            snprintf(run_id, sizeof(run_id), "%s", c);
        break;
    }
    case SQLITE_DONE:
        rc = err_set(ERR_NOTFOUND, "%s %s: not found", entity_name(kind), id);
        break;
    default:
        rc = store_err(st, entity_name(kind));
    }
    store_done(s);
    if (rc)
        goto fail;
    if (expect_from && strcmp(from, expect_from) != 0) {
        rc = err_set(ERR_TRANSITION, "%s %s is %s, not %s", entity_name(kind), id, from,
                     expect_from);
        goto fail;
    }
    if (!transition_allowed(kind, from, to)) {
        rc = err_set(ERR_TRANSITION, "%s %s: cannot go from %s to %s", entity_name(kind), id, from,
                     to);
        goto fail;
    }
    if ((rc = store_prepare(st, &s, upd[kind])) != 0)
        goto fail;
    store_bind_text(s, 1, to);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int(s, 3, is_terminal(kind, to));
    store_bind_text(s, 4, id);
    store_bind_text(s, 5, from);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = store_err(st, "status");
    else if (sqlite3_changes(store_db(st)) != 1)
        rc = err_set(ERR_TRANSITION, "%s %s changed under us", entity_name(kind), id);
    store_done(s);
    if (rc)
        goto fail;

    payload = extra ? cJSON_Duplicate(extra, 1) : cJSON_CreateObject();
    if (!payload)
        abort();
    cJSON_DeleteItemFromObjectCaseSensitive(payload, "from");
    cJSON_DeleteItemFromObjectCaseSensitive(payload, "to");
    cJSON_AddStringToObject(payload, "from", from);
    cJSON_AddStringToObject(payload, "to", to);
    snprintf(type, sizeof(type), "%s.%s", entity_name(kind), to);
    rc = store_event_add(st, goal_id[0] ? goal_id : NULL, item_id[0] ? item_id : NULL,
                         run_id[0] ? run_id : NULL, type, payload, NULL);
    cJSON_Delete(payload);
    if (rc)
        goto fail;
    if (kind == ENTITY_GOAL && is_terminal(kind, to) &&
        (rc = close_escalations(st, id, to, now)) != 0)
        goto fail;
    return store_tx_commit(st);
fail:
    store_tx_rollback(st);
    return rc;
}
