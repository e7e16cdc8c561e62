/*
 * escalation.c - the escalations table and the packet's reads (see
 * escalation.h).
 */
#include "store/escalation.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/xalloc.h"

/* Column i as text ("" for NULL). */
static const char *col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    return t ? (const char *)t : "";
}

/* Step a statement that returns no row: 0, or the store's error. */
static int step_done(store *st, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, what);

    store_done(s);
    return rc;
}

int store_escalation_insert(store *st, const struct store_escalation_new *e, int *inserted)
{
    static const char ins[] =
        "INSERT OR IGNORE INTO escalations(id, goal_id, item_id, run_id, type, severity, urgency,"
        " status, packet, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?)";
    sqlite3_stmt *s;
    int rc;

    *inserted = 0;
    if ((rc = store_prepare(st, &s, ins)) != 0)
        return rc;
    store_bind_text(s, 1, e->id);
    store_bind_text(s, 2, e->goal_id);
    store_bind_text(s, 3, e->item_id);
    store_bind_text(s, 4, e->run_id);
    store_bind_text(s, 5, e->type);
    store_bind_text(s, 6, e->severity);
    store_bind_text(s, 7, e->urgency);
    store_bind_text(s, 8, e->packet);
    sqlite3_bind_int64(s, 9, e->created_at);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "escalation");
    *inserted = sqlite3_changes(store_db(st)) == 1;
    store_done(s);
    return rc;
}

int store_escalation_packet_attempts(store *st, const char *goal_id, const char *item_id,
                                     cJSON *arr)
{
    /* an attempt's strategy: the last Plan B or human alternative given to
     * the item before the run was claimed - or, for a Plan B a dead run
     * left owed, the one its next run asked for (asked_in_run) */
    static const char q_item[] =
        "SELECT id, kind, attempt, tier, model_index, ifnull(model, ''), status,"
        " ifnull(summary, ''), ifnull(failure_reason, ''), ifnull(error_class, ''),"
        " ifnull(error_signature, ''),"
        " (SELECT CASE e.type WHEN 'recovery.plan_b' THEN json_extract(e.payload, '$.strategy')"
        "  ELSE json_extract(e.payload, '$.input') END FROM events e WHERE e.item_id = r.item_id"
        "  AND (e.type = 'recovery.plan_b' OR (e.type = 'escalation.resolved'"
        "  AND json_extract(e.payload, '$.action') = 'alternative'))"
        "  AND (e.id < (SELECT min(c.id) FROM events c WHERE c.run_id = r.id)"
        "  OR (e.run_id = r.id AND json_extract(e.payload, '$.asked_in_run') = 1))"
        "  ORDER BY e.id DESC LIMIT 1)"
        " FROM runs r WHERE item_id = ? ORDER BY created_at, rowid";
    static const char q_goal[] =
        "SELECT id, kind, attempt, tier, model_index, ifnull(model, ''), status,"
        " ifnull(summary, ''), ifnull(failure_reason, ''), ifnull(error_class, ''),"
        " ifnull(error_signature, ''), NULL FROM runs WHERE goal_id = ? AND item_id IS NULL"
        " ORDER BY created_at, rowid";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, item_id ? q_item : q_goal)) != 0)
        return rc;
    store_bind_text(s, 1, item_id ? item_id : goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        xcheck(o);
        cJSON_AddStringToObject(o, "run_id", col_text(s, 0));
        cJSON_AddStringToObject(o, "kind", col_text(s, 1));
        cJSON_AddNumberToObject(o, "attempt", sqlite3_column_int(s, 2));
        cJSON_AddNumberToObject(o, "tier", sqlite3_column_int(s, 3));
        cJSON_AddNumberToObject(o, "model_index", sqlite3_column_int(s, 4));
        cJSON_AddStringToObject(o, "model", col_text(s, 5));
        cJSON_AddStringToObject(o, "status", col_text(s, 6));
        cJSON_AddStringToObject(o, "strategy", sqlite3_column_type(s, 11) == SQLITE_NULL
                                                   ? "as planned"
                                                   : col_text(s, 11));
        cJSON_AddStringToObject(o, "tried", col_text(s, 7));
        cJSON_AddStringToObject(o, "why_failed", col_text(s, 8));
        cJSON_AddStringToObject(o, "error_class", col_text(s, 9));
        cJSON_AddStringToObject(o, "signature", col_text(s, 10));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return 0;
}

int store_escalation_packet_gates(store *st, const char *item_id, cJSON *passing,
                                  cJSON *failing)
{
    static const char q_gates[] =
        "SELECT name, passed, ifnull(exit_code, -1), ifnull(classification, '')"
        " FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results WHERE item_id = ?"
        " GROUP BY name) ORDER BY name";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, q_gates)) != 0)
        return rc;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *g = cJSON_CreateObject();
        xcheck(g);
        cJSON_AddStringToObject(g, "name", col_text(s, 0));
        cJSON_AddNumberToObject(g, "exit_code", sqlite3_column_int(s, 2));
        cJSON_AddStringToObject(g, "classification", col_text(s, 3));
        cJSON_AddItemToArray(sqlite3_column_int(s, 1) ? passing : failing, g);
    }
    store_done(s);
    return 0;
}

int store_escalation_packet_artifacts(store *st, const char *goal_id, cJSON *arr)
{
    static const char q_art[] =
        "SELECT type, ifnull(ref, ''), ifnull(path, ''), ifnull(hash, '') FROM artifacts"
        " WHERE goal_id = ? ORDER BY id";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, q_art)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *a = cJSON_CreateObject();
        xcheck(a);
        cJSON_AddStringToObject(a, "type", col_text(s, 0));
        cJSON_AddStringToObject(a, "ref", col_text(s, 1));
        cJSON_AddStringToObject(a, "path", col_text(s, 2));
        cJSON_AddStringToObject(a, "hash", col_text(s, 3));
        cJSON_AddItemToArray(arr, a);
    }
    store_done(s);
    return 0;
}

int store_escalation_packet_tool_calls(store *st, const char *run_id, cJSON *arr)
{
    static const char q[] =
        "SELECT tool, args FROM (SELECT id, json_extract(payload, '$.tool') AS tool,"
        " substr(ifnull(json_extract(payload, '$.arguments'), ''), 1, 300) AS args FROM events"
        " WHERE run_id = ? AND type = 'tool_call.started'"
        " AND json_extract(payload, '$.tool') <> 'ask_human' ORDER BY id DESC LIMIT 5)"
        " ORDER BY id";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, run_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        xcheck(o);
        cJSON_AddStringToObject(o, "tool", col_text(s, 0));
        cJSON_AddStringToObject(o, "args", col_text(s, 1));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return 0;
}

int store_escalation_ref_get(store *st, const char *id, struct store_escalation_ref *e)
{
    static const char sql[] =
        "SELECT e.goal_id, ifnull(e.item_id, ''), e.type, e.status, ifnull(w.status, ''),"
        " ifnull(r.kind, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " LEFT JOIN runs r ON r.id = e.run_id WHERE e.id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    memset(e, 0, sizeof(*e));
    store_bind_text(s, 1, id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(e->id, sizeof(e->id), "%s", id);
        snprintf(e->goal_id, sizeof(e->goal_id), "%s", col_text(s, 0));
        snprintf(e->item_id, sizeof(e->item_id), "%s", col_text(s, 1));
        snprintf(e->type, sizeof(e->type), "%s", col_text(s, 2));
        snprintf(e->status, sizeof(e->status), "%s", col_text(s, 3));
        snprintf(e->item_status, sizeof(e->item_status), "%s", col_text(s, 4));
        snprintf(e->run_kind, sizeof(e->run_kind), "%s", col_text(s, 5));
    } else {
        rc = err_set(ERR_NOTFOUND, "escalation %s: not found", id);
    }
    store_done(s);
    return rc;
}

int store_escalation_set_paused(store *st, const char *id, const char *input)
{
    static const char sql[] = "UPDATE escalations SET resolution = 'pause', resolution_input = ?1"
                              " WHERE id = ?2";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, sql)) != 0)
        return rc;
    store_bind_text(s, 1, input);
    store_bind_text(s, 2, id);
    return step_done(st, s, "resolve");
}

int store_escalation_resolve(store *st, const char *id, const char *resolution,
                             const char *input, int64_t now_ms)
{
    static const char sql[] =
        "UPDATE escalations SET status = 'resolved', resolution = ?, resolution_input = ?,"
        " resolved_at = ? WHERE id = ?";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, sql)) != 0)
        return rc;
    store_bind_text(s, 1, resolution);
    store_bind_text(s, 2, input);
    sqlite3_bind_int64(s, 3, now_ms);
    store_bind_text(s, 4, id);
    return step_done(st, s, "resolve");
}

int store_escalation_resolve_others_partial(store *st, const char *goal_id,
                                            const char *except_id, int64_t now_ms)
{
    static const char sql[] = "UPDATE escalations SET status = 'resolved', resolution ="
                              " 'complete_partial', resolved_at = ?3 WHERE goal_id = ?1"
                              " AND status = 'open' AND id <> ?2";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, sql)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, except_id);
    sqlite3_bind_int64(s, 3, now_ms);
    return step_done(st, s, "resolve");
}

int store_escalation_goal_held(store *st, const char *goal_id, int *yes)
{
    static const char sql[] =
        "SELECT (SELECT count(*) FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        "        WHERE e.goal_id = ?1 AND e.status = 'open' AND e.type <> 'deadline'"
        "        AND (e.item_id IS NULL OR w.critical = 1))"
        " + (SELECT count(*) FROM work_items WHERE goal_id = ?1 AND critical = 1"
        "        AND status IN ('blocked', 'escalated'))";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    *yes = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) > 0;
    store_done(s);
    return 0;
}

int store_escalation_ids_system_closable(store *st, const char *goal_id, const char *type,
                                         int goal_only, char (**out)[ID_SIZE], size_t *n)
{
    /* never the publish unit's (a forge's refusal, a hung push: not the
     * model's to fix); goal_only: not an item's either */
    static const char q[] =
        "SELECT e.id FROM escalations e LEFT JOIN runs r ON r.id = e.run_id"
        " WHERE e.status = 'open' AND (?1 IS NULL OR e.goal_id = ?1) AND e.type = ?2"
        " AND ifnull(r.kind, '') <> 'publish'"
        " AND ifnull(json_extract(e.packet, '$.scope'), '') <> 'publish'"
        " AND (?3 = 0 OR e.item_id IS NULL) ORDER BY e.created_at, e.id";
    size_t cap = 0;
    sqlite3_stmt *s;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, type);
    sqlite3_bind_int(s, 3, goal_only);
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof(**out));
        }
        snprintf((*out)[(*n)++], ID_SIZE, "%s", col_text(s, 0));
    }
    store_done(s);
    return 0;
}

/* The first column of each row of s (at most max) into ids. */
static void ids_copy(sqlite3_stmt *s, char (*ids)[ID_SIZE], int max, int *n)
{
    *n = 0;
    while (*n < max && sqlite3_step(s) == SQLITE_ROW) {
        snprintf(ids[*n], ID_SIZE, "%s", col_text(s, 0));
        (*n)++;
    }
    store_done(s);
}

int store_escalation_goals_past_deadline(store *st, int64_t now_ms, char (*ids)[ID_SIZE],
                                         int max, int *n)
{
    static const char q[] =
        "SELECT id FROM goals g WHERE is_template = 0 AND deadline_at IS NOT NULL"
        " AND deadline_at < ? AND status IN ('queued','active','blocked')"
        " AND NOT EXISTS (SELECT 1 FROM escalations e WHERE e.goal_id = g.id"
        " AND e.type = 'deadline')";
    sqlite3_stmt *s;
    int rc;

    *n = 0;
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    sqlite3_bind_int64(s, 1, now_ms);
    ids_copy(s, ids, max, n);
    return 0;
}

int store_escalation_goals_budget_spent(store *st, char (*ids)[ID_SIZE], int max, int *n)
{
    static const char q_budget[] =
        "SELECT id FROM goals g WHERE status = 'active' AND ("
        " (budget_max_tokens IS NOT NULL AND spent_tokens >= budget_max_tokens) OR"
        " (budget_max_cost_usd IS NOT NULL AND spent_cost_usd >= budget_max_cost_usd) OR"
        " (budget_max_hours IS NOT NULL AND spent_wall_ms >= budget_max_hours * 3600000))"
        " AND NOT EXISTS (SELECT 1 FROM escalations e WHERE e.goal_id = g.id"
        " AND e.type = 'budget' AND e.status = 'open')";
    sqlite3_stmt *s;
    int rc;

    *n = 0;
    if ((rc = store_prepare(st, &s, q_budget)) != 0)
        return rc;
    ids_copy(s, ids, max, n);
    return 0;
}
