/*
 * trigger.c - the triggers table (see trigger.h).
 */
#include "store/trigger.h"

#include <stdio.h>
#include <string.h>

#include "store/internal.h"

int store_trigger_templates_without(store *st, struct store_trigger_due *rows, int max, int *n)
{
    static const char q[] = "SELECT id, schedule FROM goals g WHERE is_template = 1"
                            " AND status <> 'cancelled' AND schedule IS NOT NULL"
                            " AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.goal_id = g.id)";
    store_stmt *s;
    int rc;

    *n = 0;
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    while (*n < max && store_step(s) == STORE_ROW) {
        struct store_trigger_due *r = &rows[*n];
        memset(r, 0, sizeof(*r));
        snprintf(r->goal_id, sizeof(r->goal_id), "%s", store_col_raw(s, 0));
        snprintf(r->schedule, sizeof(r->schedule), "%s", store_col_raw(s, 1));
        (*n)++;
    }
    store_done(s);
    return 0;
}

int store_trigger_insert(store *st, const char *id, const char *goal_id, const char *schedule,
                         const char *timezone, int64_t next_fire_at, int64_t now_ms)
{
    static const char ins[] =
        "INSERT INTO triggers(id, goal_id, schedule, timezone, enabled, next_fire_at,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?)";
    return store_exec_args(st, "trigger", NULL, ins,
                           STORE_ARGS(STORE_TEXT(id), STORE_TEXT(goal_id), STORE_TEXT(schedule),
                                      STORE_TEXT(timezone), STORE_I64(next_fire_at),
                                      STORE_I64(now_ms), STORE_I64(now_ms)));
}

int store_trigger_next_fire_of_goal(store *st, const char *goal_id, int64_t *at, int *found)
{
    static const char q[] =
        "SELECT next_fire_at FROM triggers WHERE goal_id = ? AND enabled = 1 LIMIT 1";
    store_stmt *s;
    int rc;

    *found = 0;
    if ((rc = store_prepare_args(st, &s, q, STORE_ARGS(STORE_TEXT(goal_id)))) != 0)
        return rc;
    if (store_step(s) == STORE_ROW) {
        *at = store_col_i64(s, 0);
        *found = 1;
    }
    store_done(s);
    return 0;
}

int store_trigger_list_due(store *st, int64_t now_ms, struct store_trigger_due *rows, int max,
                           int *n)
{
    static const char q[] =
        "SELECT t.id, t.goal_id, t.schedule, t.next_fire_at FROM triggers t"
        " JOIN goals g ON g.id = t.goal_id WHERE t.enabled = 1 AND t.next_fire_at <= ?"
        " AND g.status <> 'cancelled' ORDER BY t.next_fire_at";
    store_stmt *s;
    int rc;

    *n = 0;
    if ((rc = store_prepare_args(st, &s, q, STORE_ARGS(STORE_I64(now_ms)))) != 0)
        return rc;
    while (*n < max && store_step(s) == STORE_ROW) {
        struct store_trigger_due *r = &rows[*n];
        snprintf(r->id, sizeof(r->id), "%s", store_col_raw(s, 0));
        snprintf(r->goal_id, sizeof(r->goal_id), "%s", store_col_raw(s, 1));
        snprintf(r->schedule, sizeof(r->schedule), "%s", store_col_raw(s, 2));
        r->next_fire_at = store_col_i64(s, 3);
        (*n)++;
    }
    store_done(s);
    return 0;
}

int store_trigger_set_fired(store *st, const char *id, int64_t next, int64_t now_ms)
{
    static const char upd[] = "UPDATE triggers SET next_fire_at = ?, last_fire_at = ?,"
                              " updated_at = ? WHERE id = ?";
    return store_exec_args(
        st, "trigger", NULL, upd,
        STORE_ARGS(STORE_I64(next), STORE_I64(now_ms), STORE_I64(now_ms), STORE_TEXT(id)));
}
