/*
 * trigger.c - the triggers table (see trigger.h).
 */
#include "store/trigger.h"

#include <stdio.h>
#include <string.h>

#include "store/internal.h"

/* store_row_fn: (goal_id, schedule) into (struct store_trigger_due *)ctx. */
static void template_fill(store_stmt *s, void *ctx)
{
    struct store_trigger_due *r = ctx;

    /* truncation: ok, an id, ID_SIZE both */
    snprintf(r->goal_id, sizeof(r->goal_id), "%s", store_col_raw(s, 0));
    /* truncation: ok, cron_parse holds a schedule under 256 bytes */
    snprintf(r->schedule, sizeof(r->schedule), "%s", store_col_raw(s, 1));
}

int store_trigger_templates_without(store *st, struct store_trigger_due *rows, int max, int *n)
{
    static const char q[] = "SELECT id, schedule FROM goals g WHERE is_template = 1"
                            " AND status <> 'cancelled' AND schedule IS NOT NULL"
                            " AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.goal_id = g.id)";

    return store_rows_fill(st, rows, max, n, STORE_ROW_SHAPE(*rows, template_fill), q, NULL, 0);
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

    return store_get_int64(st, NULL, at, found, q, STORE_ARGS(STORE_TEXT(goal_id)));
}

/* store_row_fn: (id, goal_id, schedule, next_fire_at) into
 * (struct store_trigger_due *)ctx. */
static void due_fill(store_stmt *s, void *ctx)
{
    struct store_trigger_due *r = ctx;

    /* truncation: ok, an id, ID_SIZE both */
    snprintf(r->id, sizeof(r->id), "%s", store_col_raw(s, 0));
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(r->goal_id, sizeof(r->goal_id), "%s", store_col_raw(s, 1));
    /* truncation: ok, cron_parse holds a schedule under 256 bytes */
    snprintf(r->schedule, sizeof(r->schedule), "%s", store_col_raw(s, 2));
    r->next_fire_at = store_col_i64(s, 3);
}

int store_trigger_list_due(store *st, int64_t now_ms, struct store_trigger_due *rows, int max,
                           int *n)
{
    static const char q[] =
        "SELECT t.id, t.goal_id, t.schedule, t.next_fire_at FROM triggers t"
        " JOIN goals g ON g.id = t.goal_id WHERE t.enabled = 1 AND t.next_fire_at <= ?"
        " AND g.status <> 'cancelled' ORDER BY t.next_fire_at";

    return store_rows_fill(st, rows, max, n, STORE_ROW_SHAPE(*rows, due_fill), q,
                           STORE_ARGS(STORE_I64(now_ms)));
}

int store_trigger_set_fired(store *st, const char *id, int64_t next, int64_t now_ms)
{
    static const char upd[] = "UPDATE triggers SET next_fire_at = ?, last_fire_at = ?,"
                              " updated_at = ? WHERE id = ?";
    return store_exec_args(
        st, "trigger", NULL, upd,
        STORE_ARGS(STORE_I64(next), STORE_I64(now_ms), STORE_I64(now_ms), STORE_TEXT(id)));
}
