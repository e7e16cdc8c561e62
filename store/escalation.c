/* escalation.c - the escalations and decisions tables (see escalation.h). */
#include "store/escalation.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define TXT(s, i) (store_col_raw((s), (i)))

/* Step s to its end: each row filled into a struct by fill, handed to fn.
 * The statement is done here. */
static int escalation_rows(store *st, store_stmt *s,
                           void (*fill)(struct store_escalation *e, store_stmt *s),
                           int (*fn)(const struct store_escalation *e, void *ctx), void *ctx)
{
    int rc = 0;

    while (store_next_row(st, s, "escalations", &rc)) {
        struct store_escalation e;
        memset(&e, 0, sizeof(e));
        fill(&e, s);
        if ((rc = fn(&e, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}

int store_escalation_count_open(store *st, const char *goal_id, int *out)
{
    static const char q_esc[] =
        "SELECT count(*) FROM escalations WHERE goal_id = ? AND status = 'open'";
    int64_t v;
    int rc = store_count(st, "count escalations", &v, q_esc, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc == 0)
        *out = (int)v;
    return rc;
}

static void fill_open_of_goal(struct store_escalation *e, store_stmt *s)
{
    e->id = TXT(s, 0);
    e->item_id = TXT(s, 1);
    e->type = TXT(s, 2);
    e->severity = TXT(s, 3);
    e->urgency = TXT(s, 4);
    e->status = TXT(s, 5);
    e->created_at = store_col_i64(s, 6);
    e->question = TXT(s, 7);
    e->item_key = TXT(s, 8);
    e->item_title = TXT(s, 9);
    e->last_tool_calls = TXT(s, 10);
}

int store_escalation_each_open_of_goal(store *st, const char *goal_id,
                                       int (*fn)(const struct store_escalation *e, void *ctx),
                                       void *ctx)
{
    static const char sql[] =
        "SELECT id, item_id, type, severity, urgency, status, created_at,"
        " json_extract(packet, '$.minimal_question'), json_extract(packet, '$.work_item.key'),"
        " json_extract(packet, '$.work_item.title'), json_extract(packet, '$.last_tool_calls')"
        " FROM escalations WHERE goal_id = ? AND status = 'open' ORDER BY created_at, id";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, sql, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    return escalation_rows(st, s, fill_open_of_goal, fn, ctx);
}

static void fill_listed(struct store_escalation *e, store_stmt *s)
{
    e->id = TXT(s, 0);
    e->goal_id = TXT(s, 1);
    e->item_id = TXT(s, 2);
    e->type = TXT(s, 3);
    e->severity = TXT(s, 4);
    e->urgency = TXT(s, 5);
    e->status = TXT(s, 6);
    e->resolution = TXT(s, 7);
    e->packet = TXT(s, 8);
    e->created_at = store_col_i64(s, 9);
    e->goal_title = TXT(s, 10);
    e->item_key = TXT(s, 11);
}

int store_escalation_each_listed(store *st, int all,
                                 int (*fn)(const struct store_escalation *e, void *ctx), void *ctx)
{
    static const char q_open[] =
        "SELECT e.id, e.goal_id, coalesce(e.item_id, ''), e.type, e.severity, e.urgency, e.status,"
        " coalesce(e.resolution, ''), e.packet, e.created_at, g.title, coalesce(w.key, '')"
        " FROM escalations e JOIN goals g ON g.id = e.goal_id"
        " LEFT JOIN work_items w ON w.id = e.item_id WHERE e.status = 'open'"
        " ORDER BY e.created_at, e.id";
    static const char q_all[] =
        "SELECT e.id, e.goal_id, coalesce(e.item_id, ''), e.type, e.severity, e.urgency, e.status,"
        " coalesce(e.resolution, ''), e.packet, e.created_at, g.title, coalesce(w.key, '')"
        " FROM escalations e JOIN goals g ON g.id = e.goal_id"
        " LEFT JOIN work_items w ON w.id = e.item_id ORDER BY e.created_at, e.id";
    store_stmt *s;
    int rc = store_prepare(st, &s, all ? q_all : q_open);

    if (rc)
        return rc;
    return escalation_rows(st, s, fill_listed, fn, ctx);
}

static void fill_open_question(struct store_escalation *e, store_stmt *s)
{
    e->type = TXT(s, 0);
    e->item_key = TXT(s, 1);
    e->question = TXT(s, 2);
}

int store_escalation_each_open_question(store *st, const char *goal_id, int limit,
                                        int (*fn)(const struct store_escalation *e, void *ctx),
                                        void *ctx)
{
    static const char q[] =
        "SELECT e.type, coalesce(w.key, ''), coalesce(json_extract(e.packet, '$.minimal_question'),"
        " w.question, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " WHERE e.goal_id = ? AND e.status = 'open' ORDER BY e.created_at, e.id LIMIT ?";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q, STORE_ARGS(STORE_TEXT(goal_id), STORE_I64(limit)));

    if (rc)
        return rc;
    return escalation_rows(st, s, fill_open_question, fn, ctx);
}

/* The first column of sql's first row (arg bound as ?1), parsed as JSON:
 * *out NULL when there is no row, the column is NULL or not JSON. */
static void json_fill(store_stmt *s, void *ctx)
{
    if (store_col_raw(s, 0))
        *(cJSON **)ctx = cJSON_Parse(TXT(s, 0));
}

static int decision_json(store *st, const char *sql, const char *arg, cJSON **out)
{
    int found;

    *out = NULL;
    return store_get_row(st, "decisions", json_fill, out, &found, sql, STORE_ARGS(STORE_TEXT(arg)));
}

int store_decision_latest_verification(store *st, const char *item_id, cJSON **out)
{
    static const char q[] = "SELECT data FROM decisions WHERE item_id = ? AND kind = 'verification'"
                            " ORDER BY id DESC LIMIT 1";

    return decision_json(st, q, item_id, out);
}

int store_decision_partial_failures(store *st, const char *goal_id, cJSON **out)
{
    static const char q[] = "SELECT json_extract(data, '$.partial_failures') FROM decisions"
                            " WHERE goal_id = ? AND kind = 'final_check'"
                            " AND CAST(coalesce(json_extract(data, '$.partial'), '0') AS BIGINT)"
                            " <> 0 ORDER BY id DESC LIMIT 1";

    return decision_json(st, q, goal_id, out);
}

int store_decision_latest_final_check(store *st, const char *goal_id, cJSON **out)
{
    static const char q_final[] =
        "SELECT data FROM decisions WHERE goal_id = ? AND kind = 'final_check'"
        " ORDER BY id DESC LIMIT 1";

    return decision_json(st, q_final, goal_id, out);
}

int store_decision_evidence_rows(store *st, const char *goal_id, cJSON **out)
{
    /* one JSON array of the latest evidence per (criterion, item) of the
     * done items; the dialects build JSON with their own functions */
#define EVIDENCE_FROM                                                                              \
    " FROM decisions d JOIN work_items w ON w.id = d.item_id"                                      \
    " WHERE d.goal_id = ?1 AND d.kind = 'evidence' AND w.status = 'done' AND d.id IN"              \
    " (SELECT max(id) FROM decisions WHERE goal_id = ?1 AND kind = 'evidence'"                     \
    "  GROUP BY item_id, note)"
    static const char q_lite[] =
        "SELECT json_group_array(json_object('criterion', d.note, 'item', w.key,"
        " 'evidence', coalesce(json_extract(d.data, '$.evidence'),"
        "   CASE WHEN json_extract(d.data, '$.unverified') THEN 'none' ELSE 'gates' END),"
        " 'backed_by', json(coalesce(json_extract(d.data, '$.backed_by'), '[]')),"
        " 'tests', json(coalesce(json_extract(d.data, '$.tests'), '[]'))))" EVIDENCE_FROM
        " ORDER BY w.created_at, w.rowid, d.id";
    static const char q_pg[] =
        "SELECT coalesce(json_agg(json_build_object('criterion', d.note, 'item', w.key,"
        " 'evidence', coalesce(d.data::jsonb ->> 'evidence',"
        "   CASE WHEN coalesce(json_extract(d.data, '$.unverified'), '0') NOT IN ('0', '')"
        "   THEN 'none' ELSE 'gates' END),"
        " 'backed_by', coalesce(d.data::jsonb -> 'backed_by', '[]'::jsonb),"
        " 'tests', coalesce(d.data::jsonb -> 'tests', '[]'::jsonb))"
        " ORDER BY w.created_at, w.rowid, d.id), '[]'::json)" EVIDENCE_FROM;
#undef EVIDENCE_FROM

    return decision_json(st, store_sql(st, q_lite, q_pg), goal_id, out);
}

/* Step s (goal_id bound as ?1 and ?2 by the caller when it has them) to
 * its end: each row filled by fill, handed to fn; s is done here. */
static int decision_rows(store *st, store_stmt *s,
                         void (*fill)(struct store_decision *d, store_stmt *s),
                         int (*fn)(const struct store_decision *d, void *ctx), void *ctx)
{
    int rc = 0;

    while (store_next_row(st, s, "decisions", &rc)) {
        struct store_decision d;
        memset(&d, 0, sizeof(d));
        fill(&d, s);
        if ((rc = fn(&d, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}

static void fill_evidence(struct store_decision *d, store_stmt *s)
{
    d->note = TXT(s, 0);
    d->data = TXT(s, 1);
    d->item_key = TXT(s, 2);
}

int store_decision_each_evidence(store *st, const char *goal_id,
                                 int (*fn)(const struct store_decision *d, void *ctx), void *ctx)
{
    /* one row per (criterion, item): the item's latest evidence for it */
    static const char q_evidence[] =
        "SELECT d.note, d.data, w.key FROM decisions d JOIN work_items w ON w.id = d.item_id"
        " WHERE d.goal_id = ? AND d.kind = 'evidence' AND w.status = 'done' AND d.id IN"
        " (SELECT max(id) FROM decisions WHERE goal_id = ? AND kind = 'evidence'"
        " GROUP BY item_id, note) ORDER BY w.created_at, w.rowid, d.id";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q_evidence,
                                STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    return decision_rows(st, s, fill_evidence, fn, ctx);
}

static void fill_inputs(struct store_decision *d, store_stmt *s)
{
    d->item_key = TXT(s, 0);
    d->data = TXT(s, 1);
}

int store_decision_each_gate_inputs_changed(store *st, const char *goal_id,
                                            int (*fn)(const struct store_decision *d, void *ctx),
                                            void *ctx)
{
    static const char q_inputs[] =
        "SELECT w.key, json_extract(d.data, '$.gate_inputs_changed') FROM decisions d"
        " JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ? AND d.kind = 'verification'"
        " AND w.status = 'done' AND json_array_length(json_extract(d.data,"
        " '$.gate_inputs_changed')) > 0 AND d.id IN (SELECT max(id) FROM decisions"
        " WHERE goal_id = ? AND kind = 'verification' GROUP BY item_id)"
        " ORDER BY w.created_at, w.rowid";
    store_stmt *s;
    int rc =
        store_prepare_args(st, &s, q_inputs, STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    return decision_rows(st, s, fill_inputs, fn, ctx);
}

static void fill_review(struct store_decision *d, store_stmt *s)
{
    d->item_key = TXT(s, 0);
    d->kind = TXT(s, 1);
    d->aspect = TXT(s, 2);
    d->severity = TXT(s, 3);
    d->note = TXT(s, 4);
}

int store_decision_each_review(store *st, const char *goal_id,
                               int (*fn)(const struct store_decision *d, void *ctx), void *ctx)
{
    static const char q_review[] =
        "SELECT w.key, d.kind, coalesce(d.aspect, ''), coalesce(d.severity, ''), coalesce(d.note, "
        "'')"
        " FROM decisions d JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ?"
        " AND d.kind IN ('review_verdict', 'review_finding', 'review_unavailable') ORDER BY d.id";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q_review, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    return decision_rows(st, s, fill_review, fn, ctx);
}

int store_decision_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                       const char *kind, const char *aspect, const char *severity, const char *note,
                       const struct cJSON *data)
{
    static const char sql[] =
        "INSERT INTO decisions(goal_id, item_id, run_id, kind, aspect, severity, note, data,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    char *text = data ? cJSON_PrintUnformatted(data) : NULL;
    int rc = store_exec_args(st, "decision", NULL, sql,
                             STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(item_id),
                                        STORE_TEXT(run_id), STORE_TEXT(kind), STORE_TEXT(aspect),
                                        STORE_TEXT(severity), STORE_TEXT(note),
                                        STORE_TEXT(text ? text : "{}"), STORE_I64(time_now_ms())));

    cJSON_free(text);
    return rc;
}

int store_decision_first_verification_baseline(store *st, const char *goal_id, char *out, size_t n)
{
    static const char q[] = "SELECT json_extract(data, '$.baseline') FROM decisions"
                            " WHERE goal_id = ? AND kind = 'verification'"
                            " AND json_extract(data, '$.baseline') IS NOT NULL ORDER BY id LIMIT 1";
    return store_peek_text(st, out, n, q, STORE_ARGS(STORE_TEXT(goal_id)));
}

int store_escalation_count_open_all(store *st, int64_t *out)
{
    *out = 0;
    return store_count(st, "escalations", out,
                       "SELECT count(*) FROM escalations WHERE status = 'open'", NULL, 0);
}

int store_escalation_close_by_system(store *st, const char *goal_id, const char *reason,
                                     int64_t now_ms,
                                     int (*fn)(const char *id, const char *type, void *ctx),
                                     void *ctx)
{
    static const char sel[] = "SELECT id, type FROM escalations WHERE goal_id = ?"
                              " AND status = 'open' ORDER BY created_at, id";
    static const char upd[] = "UPDATE escalations SET status = 'resolved', resolution = 'system',"
                              " resolution_input = ?, resolved_at = ? WHERE id = ?";
    store_stmt *s, *u;
    int rc = store_prepare_args(st, &s, sel, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    while (rc == 0 && store_step(s) == STORE_ROW) {
        const char *id = store_col_raw(s, 0);
        if ((rc = store_prepare(st, &u, upd)) == 0) {
            store_bind_text(u, 1, reason);
            store_bind_i64(u, 2, now_ms);
            store_bind_text(u, 3, id);
            rc = store_step(u) == STORE_DONE ? 0 : store_err(st, "escalation");
            store_done(u);
        }
        if (rc == 0)
            rc = fn(id, store_col_raw(s, 1), ctx);
    }
    store_done(s);
    return rc;
}

int store_escalation_insert(store *st, const struct store_escalation_new *e, int *inserted)
{
    static const char ins[] =
        "INSERT INTO escalations(id, goal_id, item_id, run_id, type, severity, urgency,"
        " status, packet, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?)"
        " ON CONFLICT DO NOTHING";
    int n = 0;
    int rc = store_exec_args(
        st, "escalation", &n, ins,
        STORE_ARGS(STORE_TEXT(e->id), STORE_TEXT(e->goal_id), STORE_TEXT(e->item_id),
                   STORE_TEXT(e->run_id), STORE_TEXT(e->type), STORE_TEXT(e->severity),
                   STORE_TEXT(e->urgency), STORE_TEXT(e->packet), STORE_I64(e->created_at)));

    *inserted = n == 1;
    return rc;
}

int store_escalation_packet_attempts(store *st, const char *goal_id, const char *item_id,
                                     cJSON *arr)
{
    /* an attempt's strategy: the last Plan B or human alternative given to
     * the item before the run was claimed - or, for a Plan B a dead run
     * left owed, the one its next run asked for (asked_in_run) */
    static const char q_item[] =
        "SELECT id, kind, attempt, tier, model_index, coalesce(model, ''), status,"
        " coalesce(summary, ''), coalesce(failure_reason, ''), coalesce(error_class, ''),"
        " coalesce(error_signature, ''),"
        " (SELECT CASE e.type WHEN 'recovery.plan_b' THEN json_extract(e.payload, '$.strategy')"
        "  ELSE json_extract(e.payload, '$.input') END FROM events e WHERE e.item_id = r.item_id"
        "  AND (e.type = 'recovery.plan_b' OR (e.type = 'escalation.resolved'"
        "  AND json_extract(e.payload, '$.action') = 'alternative'))"
        "  AND (e.id < (SELECT min(c.id) FROM events c WHERE c.run_id = r.id)"
        "  OR (e.run_id = r.id AND CAST(coalesce(json_extract(e.payload, '$.asked_in_run'), '0') "
        "AS BIGINT) = 1))"
        "  ORDER BY e.id DESC LIMIT 1)"
        " FROM runs r WHERE item_id = ? ORDER BY created_at, rowid";
    static const char q_goal[] =
        "SELECT id, kind, attempt, tier, model_index, coalesce(model, ''), status,"
        " coalesce(summary, ''), coalesce(failure_reason, ''), coalesce(error_class, ''),"
        " coalesce(error_signature, ''), NULL FROM runs WHERE goal_id = ? AND item_id IS NULL"
        " ORDER BY created_at, rowid";
    store_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, item_id ? q_item : q_goal)) != 0)
        return rc;
    store_bind_text(s, 1, item_id ? item_id : goal_id);
    while (store_step(s) == STORE_ROW) {
        cJSON *o = cJSON_CreateObject();
        xcheck(o);
        cJSON_AddStringToObject(o, "run_id", store_col_text(s, 0));
        cJSON_AddStringToObject(o, "kind", store_col_text(s, 1));
        cJSON_AddNumberToObject(o, "attempt", store_col_int(s, 2));
        cJSON_AddNumberToObject(o, "tier", store_col_int(s, 3));
        cJSON_AddNumberToObject(o, "model_index", store_col_int(s, 4));
        cJSON_AddStringToObject(o, "model", store_col_text(s, 5));
        cJSON_AddStringToObject(o, "status", store_col_text(s, 6));
        cJSON_AddStringToObject(o, "strategy",
                                store_col_null(s, 11) ? "as planned" : store_col_text(s, 11));
        cJSON_AddStringToObject(o, "tried", store_col_text(s, 7));
        cJSON_AddStringToObject(o, "why_failed", store_col_text(s, 8));
        cJSON_AddStringToObject(o, "error_class", store_col_text(s, 9));
        cJSON_AddStringToObject(o, "signature", store_col_text(s, 10));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return 0;
}

int store_escalation_packet_gates(store *st, const char *item_id, cJSON *passing, cJSON *failing)
{
    static const char q_gates[] =
        "SELECT name, passed, coalesce(exit_code, -1), coalesce(classification, '')"
        " FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results WHERE item_id = ?"
        " GROUP BY name) ORDER BY name";
    store_stmt *s;
    int rc;

    if ((rc = store_prepare_args(st, &s, q_gates, STORE_ARGS(STORE_TEXT(item_id)))) != 0)
        return rc;
    while (store_step(s) == STORE_ROW) {
        cJSON *g = cJSON_CreateObject();
        xcheck(g);
        cJSON_AddStringToObject(g, "name", store_col_text(s, 0));
        cJSON_AddNumberToObject(g, "exit_code", store_col_int(s, 2));
        cJSON_AddStringToObject(g, "classification", store_col_text(s, 3));
        cJSON_AddItemToArray(store_col_int(s, 1) ? passing : failing, g);
    }
    store_done(s);
    return 0;
}

int store_escalation_packet_artifacts(store *st, const char *goal_id, cJSON *arr)
{
    static const char q_art[] =
        "SELECT type, coalesce(ref, ''), coalesce(path, ''), coalesce(hash, '') FROM artifacts"
        " WHERE goal_id = ? ORDER BY id";
    store_stmt *s;
    int rc;

    if ((rc = store_prepare_args(st, &s, q_art, STORE_ARGS(STORE_TEXT(goal_id)))) != 0)
        return rc;
    while (store_step(s) == STORE_ROW) {
        cJSON *a = cJSON_CreateObject();
        xcheck(a);
        cJSON_AddStringToObject(a, "type", store_col_text(s, 0));
        cJSON_AddStringToObject(a, "ref", store_col_text(s, 1));
        cJSON_AddStringToObject(a, "path", store_col_text(s, 2));
        cJSON_AddStringToObject(a, "hash", store_col_text(s, 3));
        cJSON_AddItemToArray(arr, a);
    }
    store_done(s);
    return 0;
}

int store_escalation_packet_tool_calls(store *st, const char *run_id, cJSON *arr)
{
    static const char q[] =
        "SELECT tool, args FROM (SELECT id, json_extract(payload, '$.tool') AS tool,"
        " substr(coalesce(json_extract(payload, '$.arguments'), ''), 1, 300) AS args FROM events"
        " WHERE run_id = ? AND type = 'tool_call.started'"
        " AND json_extract(payload, '$.tool') <> 'ask_human' ORDER BY id DESC LIMIT 5) AS last"
        " ORDER BY id";
    store_stmt *s;
    int rc;

    if ((rc = store_prepare_args(st, &s, q, STORE_ARGS(STORE_TEXT(run_id)))) != 0)
        return rc;
    while (store_step(s) == STORE_ROW) {
        cJSON *o = cJSON_CreateObject();
        xcheck(o);
        cJSON_AddStringToObject(o, "tool", store_col_text(s, 0));
        cJSON_AddStringToObject(o, "args", store_col_text(s, 1));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return 0;
}

int store_escalation_ref_get(store *st, const char *id, struct store_escalation_ref *e)
{
    static const char sql[] =
        "SELECT e.goal_id, coalesce(e.item_id, ''), e.type, e.status, coalesce(w.status, ''),"
        " coalesce(r.kind, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " LEFT JOIN runs r ON r.id = e.run_id WHERE e.id = ?";
    store_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    memset(e, 0, sizeof(*e));
    store_bind_text(s, 1, id);
    if (store_step(s) == STORE_ROW) {
        snprintf(e->id, sizeof(e->id), "%s", id);
        store_col_copy(e->goal_id, sizeof(e->goal_id), s, 0);
        store_col_copy(e->item_id, sizeof(e->item_id), s, 1);
        store_col_copy(e->type, sizeof(e->type), s, 2);
        store_col_copy(e->status, sizeof(e->status), s, 3);
        store_col_copy(e->item_status, sizeof(e->item_status), s, 4);
        store_col_copy(e->run_kind, sizeof(e->run_kind), s, 5);
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
    return store_exec_args(st, "resolve", NULL, sql, STORE_ARGS(STORE_TEXT(input), STORE_TEXT(id)));
}

int store_escalation_resolve(store *st, const char *id, const char *resolution, const char *input,
                             int64_t now_ms)
{
    static const char sql[] =
        "UPDATE escalations SET status = 'resolved', resolution = ?, resolution_input = ?,"
        " resolved_at = ? WHERE id = ?";
    return store_exec_args(
        st, "resolve", NULL, sql,
        STORE_ARGS(STORE_TEXT(resolution), STORE_TEXT(input), STORE_I64(now_ms), STORE_TEXT(id)));
}

int store_escalation_resolve_others_partial(store *st, const char *goal_id, const char *except_id,
                                            int64_t now_ms)
{
    static const char sql[] = "UPDATE escalations SET status = 'resolved', resolution ="
                              " 'complete_partial', resolved_at = ?3 WHERE goal_id = ?1"
                              " AND status = 'open' AND id <> ?2";
    return store_exec_args(
        st, "resolve", NULL, sql,
        STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(except_id), STORE_I64(now_ms)));
}

int store_escalation_goal_held(store *st, const char *goal_id, int *yes)
{
    static const char sql[] =
        "SELECT (SELECT count(*) FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        "        WHERE e.goal_id = ?1 AND e.status = 'open' AND e.type <> 'deadline'"
        "        AND (e.item_id IS NULL OR w.critical = 1))"
        " + (SELECT count(*) FROM work_items WHERE goal_id = ?1 AND critical = 1"
        "        AND status IN ('blocked', 'escalated'))";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, sql, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    *yes = store_step(s) == STORE_ROW && store_col_int(s, 0) > 0;
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
        " WHERE e.status = 'open' AND (CAST(?1 AS TEXT) IS NULL OR e.goal_id = ?1) AND e.type = ?2"
        " AND coalesce(r.kind, '') <> 'publish'"
        " AND coalesce(json_extract(e.packet, '$.scope'), '') <> 'publish'"
        " AND (?3 = 0 OR e.item_id IS NULL) ORDER BY e.created_at, e.id";
    size_t cap = 0;
    store_stmt *s;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = store_prepare_args(
             st, &s, q, STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(type), STORE_I64(goal_only)))) !=
        0)
        return rc;
    while (store_step(s) == STORE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof(**out));
        }
        snprintf((*out)[(*n)++], ID_SIZE, "%s", store_col_text(s, 0));
    }
    store_done(s);
    return 0;
}

int store_escalation_goals_past_deadline(store *st, int64_t now_ms, char (*ids)[ID_SIZE], int max,
                                         int *n)
{
    static const char q[] =
        "SELECT id FROM goals g WHERE is_template = 0 AND deadline_at IS NOT NULL"
        " AND deadline_at < ? AND status IN ('queued','active','blocked')"
        " AND NOT EXISTS (SELECT 1 FROM escalations e WHERE e.goal_id = g.id"
        " AND e.type = 'deadline')";
    return store_select_rows_copy(st, ids[0], sizeof(ids[0]), max, n, q,
                                  STORE_ARGS(STORE_I64(now_ms)));
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
    return store_select_rows_copy(st, ids[0], sizeof(ids[0]), max, n, q_budget, NULL, 0);
}
