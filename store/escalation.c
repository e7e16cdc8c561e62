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

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define ESC(member, col) STORE_FIELD(struct store_escalation, member, RAW, col)
#define DEC(member, col) STORE_FIELD(struct store_decision, member, RAW, col)

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

int store_escalation_each_open_of_goal(store *st, const char *goal_id,
                                       int (*fn)(const struct store_escalation *e, void *ctx),
                                       void *ctx)
{
    struct store_escalation row;
    struct store_iter it;
    int rc;
    static const char sql[] =
        "SELECT id, item_id, type, severity, urgency, status, created_at,"
        " json_extract(packet, '$.minimal_question'), json_extract(packet, '$.work_item.key'),"
        " json_extract(packet, '$.work_item.title'), json_extract(packet, '$.last_tool_calls')"
        " FROM escalations WHERE goal_id = ? AND status = 'open' ORDER BY created_at, id";
    static const struct store_field cols[] = {
        ESC(id, 0),
        ESC(item_id, 1),
        ESC(type, 2),
        ESC(severity, 3),
        ESC(urgency, 4),
        ESC(status, 5),
        STORE_FIELD(struct store_escalation, created_at, I64, 6),
        ESC(question, 7),
        ESC(item_key, 8),
        ESC(item_title, 9),
        ESC(last_tool_calls, 10),
    };

    store_iter_begin(&it, st, "escalations", sql, STORE_ARGS(STORE_TEXT(goal_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_escalation_each_listed(store *st, int all,
                                 int (*fn)(const struct store_escalation *e, void *ctx), void *ctx)
{
    struct store_escalation row;
    struct store_iter it;
    int rc;
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
    static const struct store_field cols[] = {
        ESC(id, 0),          ESC(goal_id, 1),
        ESC(item_id, 2),     ESC(type, 3),
        ESC(severity, 4),    ESC(urgency, 5),
        ESC(status, 6),      ESC(resolution, 7),
        ESC(packet, 8),      STORE_FIELD(struct store_escalation, created_at, I64, 9),
        ESC(goal_title, 10), ESC(item_key, 11),
    };

    store_iter_begin(&it, st, "escalations", all ? q_all : q_open, NULL, 0);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_escalation_each_answered(store *st, const char *item_id, int limit,
                                   int (*fn)(const struct store_escalation *e, void *ctx),
                                   void *ctx)
{
    struct store_escalation row;
    struct store_iter it;
    int rc;
    static const char q[] =
        "SELECT type, resolution, coalesce(resolution_input, ''),"
        " coalesce(json_extract(packet, '$.minimal_question'), '') FROM escalations"
        " WHERE item_id = ? AND status = 'resolved' AND resolution IS NOT NULL"
        " AND resolution != 'system' ORDER BY resolved_at DESC, created_at DESC, id LIMIT ?";
    static const struct store_field cols[] = {
        ESC(type, 0),
        ESC(resolution, 1),
        ESC(resolution_input, 2),
        ESC(question, 3),
    };

    store_iter_begin(&it, st, "escalations", q, STORE_ARGS(STORE_TEXT(item_id), STORE_I64(limit)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_escalation_each_open_question(store *st, const char *goal_id, int limit,
                                        int (*fn)(const struct store_escalation *e, void *ctx),
                                        void *ctx)
{
    struct store_escalation row;
    struct store_iter it;
    int rc;
    static const char q[] =
        "SELECT e.type, coalesce(w.key, ''), coalesce(json_extract(e.packet, '$.minimal_question'),"
        " w.question, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " WHERE e.goal_id = ? AND e.status = 'open' ORDER BY e.created_at, e.id LIMIT ?";
    static const struct store_field cols[] = {
        ESC(type, 0),
        ESC(item_key, 1),
        ESC(question, 2),
    };

    store_iter_begin(&it, st, "escalations", q, STORE_ARGS(STORE_TEXT(goal_id), STORE_I64(limit)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

/* The first column of sql's first row (arg bound as ?1), parsed as JSON:
 * *out NULL when there is no row, the column is NULL or not JSON. */
static void json_fill(store_stmt *s, void *ctx)
{
    if (store_col_raw(s, 0))
        *(cJSON **)ctx = cJSON_Parse(store_col_raw(s, 0));
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

int store_decision_latest_waiver(store *st, const char *item_id, cJSON **out)
{
    static const char q[] = "SELECT data FROM decisions WHERE item_id = ?"
                            " AND kind = 'test_changes_accepted' ORDER BY id DESC LIMIT 1";

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

/* decision_json() with the kind bound as ?2. */
static int decision_json_kind(store *st, const char *sql, const char *id, const char *kind,
                              cJSON **out)
{
    int found;

    *out = NULL;
    return store_get_row(st, "decisions", json_fill, out, &found, sql,
                         STORE_ARGS(STORE_TEXT(id), STORE_TEXT(kind)));
}

int store_decision_latest_of_goal(store *st, const char *goal_id, const char *kind, cJSON **out)
{
    return decision_json_kind(st,
                              "SELECT data FROM decisions WHERE goal_id = ?1 AND item_id IS NULL"
                              " AND kind = ?2 ORDER BY id DESC LIMIT 1",
                              goal_id, kind, out);
}

int store_decision_latest_of_item(store *st, const char *item_id, const char *kind, cJSON **out)
{
    return decision_json_kind(st,
                              "SELECT data FROM decisions WHERE item_id = ?1 AND kind = ?2"
                              " ORDER BY id DESC LIMIT 1",
                              item_id, kind, out);
}

static void best_fill(store_stmt *s, void *ctx)
{
    struct store_best_attempt *b = ctx;
    const char *run = store_col_raw(s, 0);

    /* truncation: ok, an id, ID_SIZE both */
    snprintf(b->run_id, sizeof(b->run_id), "%s", run ? run : "");
    b->patch = xstrdup(store_col_raw(s, 1) ? store_col_raw(s, 1) : "");
    b->reason = xstrdup(store_col_raw(s, 2) ? store_col_raw(s, 2) : "");
    b->verification = store_col_raw(s, 3) ? cJSON_Parse(store_col_raw(s, 3)) : NULL;
}

int store_decision_best_attempt(store *st, const char *item_id, struct store_best_attempt *out,
                                int *found)
{
    static const char q[] =
        "SELECT d.run_id, a.path, coalesce(r.failure_reason, ''), d.data FROM decisions d"
        " JOIN artifacts a ON a.run_id = d.run_id AND a.type = 'patch'"
        " JOIN runs r ON r.id = d.run_id"
        " WHERE d.item_id = ?1 AND d.kind = 'verification' AND d.note = 'tests weakened'"
        " ORDER BY d.id DESC, a.id DESC LIMIT 1";

    memset(out, 0, sizeof(*out));
    return store_get_row(st, "decisions", best_fill, out, found, q,
                         STORE_ARGS(STORE_TEXT(item_id)));
}

void store_best_attempt_release(struct store_best_attempt *b)
{
    free(b->patch);
    free(b->reason);
    cJSON_Delete(b->verification);
    memset(b, 0, sizeof(*b));
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
        " 'tests', json(coalesce(json_extract(d.data, '$.tests'), '[]')),"
        " 'kind', json_extract(d.data, '$.kind'),"
        " 'backing', json_extract(d.data, '$.backing')))" EVIDENCE_FROM
        " ORDER BY w.created_at, w.rowid, d.id";
    static const char q_pg[] =
        "SELECT coalesce(json_agg(json_build_object('criterion', d.note, 'item', w.key,"
        " 'evidence', coalesce(d.data::jsonb ->> 'evidence',"
        "   CASE WHEN coalesce(json_extract(d.data, '$.unverified'), '0') NOT IN ('0', '')"
        "   THEN 'none' ELSE 'gates' END),"
        " 'backed_by', coalesce(d.data::jsonb -> 'backed_by', '[]'::jsonb),"
        " 'tests', coalesce(d.data::jsonb -> 'tests', '[]'::jsonb),"
        " 'kind', d.data::jsonb ->> 'kind', 'backing', d.data::jsonb ->> 'backing')"
        " ORDER BY w.created_at, w.rowid, d.id), '[]'::json)" EVIDENCE_FROM;
#undef EVIDENCE_FROM

    return decision_json(st, store_sql(st, q_lite, q_pg), goal_id, out);
}

int store_decision_each_evidence(store *st, const char *goal_id,
                                 int (*fn)(const struct store_decision *d, void *ctx), void *ctx)
{
    struct store_decision row;
    struct store_iter it;
    int rc;
    /* one row per (criterion, item): the item's latest evidence for it */
    static const char q_evidence[] =
        "SELECT d.note, d.data, w.key FROM decisions d JOIN work_items w ON w.id = d.item_id"
        " WHERE d.goal_id = ?1 AND d.kind = 'evidence' AND w.status = 'done' AND d.id IN"
        " (SELECT max(id) FROM decisions WHERE goal_id = ?1 AND kind = 'evidence'"
        " GROUP BY item_id, note) ORDER BY w.created_at, w.rowid, d.id";
    static const struct store_field cols[] = {
        DEC(note, 0),
        DEC(data, 1),
        DEC(item_key, 2),
    };

    store_iter_begin(&it, st, "decisions", q_evidence, STORE_ARGS(STORE_TEXT(goal_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_decision_each_gate_inputs_changed(store *st, const char *goal_id,
                                            int (*fn)(const struct store_decision *d, void *ctx),
                                            void *ctx)
{
    struct store_decision row;
    struct store_iter it;
    int rc;
    static const char q_inputs[] =
        "SELECT w.key, json_extract(d.data, '$.gate_inputs_changed') FROM decisions d"
        " JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ?1 AND d.kind = 'verification'"
        " AND w.status = 'done' AND json_array_length(json_extract(d.data,"
        " '$.gate_inputs_changed')) > 0 AND d.id IN (SELECT max(id) FROM decisions"
        " WHERE goal_id = ?1 AND kind = 'verification' GROUP BY item_id)"
        " ORDER BY w.created_at, w.rowid";
    static const struct store_field cols[] = {
        DEC(item_key, 0),
        DEC(data, 1),
    };

    store_iter_begin(&it, st, "decisions", q_inputs, STORE_ARGS(STORE_TEXT(goal_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_decision_each_review(store *st, const char *goal_id,
                               int (*fn)(const struct store_decision *d, void *ctx), void *ctx)
{
    struct store_decision row;
    struct store_iter it;
    int rc;
    static const char q_review[] =
        "SELECT w.key, d.kind, coalesce(d.aspect, ''), coalesce(d.severity, ''), coalesce(d.note, "
        "'')"
        " FROM decisions d JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ?"
        " AND d.kind IN ('review_verdict', 'review_finding', 'review_unavailable') ORDER BY d.id";
    static const struct store_field cols[] = {
        DEC(item_key, 0), DEC(kind, 1), DEC(aspect, 2), DEC(severity, 3), DEC(note, 4),
    };

    store_iter_begin(&it, st, "decisions", q_review, STORE_ARGS(STORE_TEXT(goal_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_decision_add(store *st, const struct store_decision_new *d)
{
    static const char sql[] =
        "INSERT INTO decisions(goal_id, item_id, run_id, kind, aspect, severity, note, data,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    char *text = d->data ? cJSON_PrintUnformatted(d->data) : NULL;
    int rc = store_exec_args(
        st, "decision", NULL, sql,
        STORE_ARGS(STORE_TEXT(d->goal_id), STORE_TEXT(d->item_id), STORE_TEXT(d->run_id),
                   STORE_TEXT(d->kind), STORE_TEXT(d->aspect), STORE_TEXT(d->severity),
                   STORE_TEXT(d->note), STORE_TEXT(text ? text : "{}"), STORE_I64(time_now_ms())));

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

/* The caller of store_escalation_close_by_system(): what to record and
 * whom to tell. */
struct close_by_system {
    store *st;
    const char *reason;
    int64_t now_ms;
    int (*fn)(const char *id, const char *type, void *ctx);
    void *ctx;
};

/* store_each_fn: the open escalation of the row (id, type) resolved by
 * the system, then handed to the caller. */
static int close_row(store_stmt *s, void *ctx)
{
    static const char upd[] = "UPDATE escalations SET status = 'resolved', resolution = 'system',"
                              " resolution_input = ?, resolved_at = ? WHERE id = ?";
    const struct close_by_system *c = ctx;
    const char *id = store_col_raw(s, 0);
    int rc =
        store_exec_args(c->st, "escalation", NULL, upd,
                        STORE_ARGS(STORE_TEXT(c->reason), STORE_I64(c->now_ms), STORE_TEXT(id)));

    return rc ? rc : c->fn(id, store_col_raw(s, 1), c->ctx);
}

int store_escalation_close_by_system(store *st, const char *goal_id, const char *reason,
                                     int64_t now_ms,
                                     int (*fn)(const char *id, const char *type, void *ctx),
                                     void *ctx)
{
    static const char sel[] = "SELECT id, type FROM escalations WHERE goal_id = ?"
                              " AND status = 'open' ORDER BY created_at, id";
    struct close_by_system c = {st, reason, now_ms, fn, ctx};

    return store_each_row(st, NULL, close_row, &c, sel, STORE_ARGS(STORE_TEXT(goal_id)));
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
    static const struct store_json_col cols[] = {
        {"run_id", 0, STORE_JSON_TEXT, NULL},      {"kind", 1, STORE_JSON_TEXT, NULL},
        {"attempt", 2, STORE_JSON_INT, NULL},      {"tier", 3, STORE_JSON_INT, NULL},
        {"model_index", 4, STORE_JSON_INT, NULL},  {"model", 5, STORE_JSON_TEXT, NULL},
        {"status", 6, STORE_JSON_TEXT, NULL},      {"strategy", 11, STORE_JSON_TEXT, "as planned"},
        {"tried", 7, STORE_JSON_TEXT, NULL},       {"why_failed", 8, STORE_JSON_TEXT, NULL},
        {"error_class", 9, STORE_JSON_TEXT, NULL}, {"signature", 10, STORE_JSON_TEXT, NULL},
    };

    return store_json_rows(st, arr, cols, (int)(sizeof(cols) / sizeof(cols[0])),
                           item_id ? q_item : q_goal,
                           STORE_ARGS(STORE_TEXT(item_id ? item_id : goal_id)));
}

/* Where store_escalation_packet_gates() puts a gate: by its column 1. */
struct gates_split {
    cJSON *passing, *failing;
};

static int gate_json_row(store_stmt *s, void *ctx)
{
    static const struct store_json_col cols[] = {
        {"name", 0, STORE_JSON_TEXT, NULL},
        {"exit_code", 2, STORE_JSON_INT, NULL},
        {"classification", 3, STORE_JSON_TEXT, NULL},
    };
    const struct gates_split *g = ctx;

    cJSON_AddItemToArray(store_col_int(s, 1) ? g->passing : g->failing,
                         store_json_object(s, cols, 3));
    return 0;
}

int store_escalation_packet_gates(store *st, const char *item_id, cJSON *passing, cJSON *failing)
{
    static const char q_gates[] =
        "SELECT name, passed, coalesce(exit_code, -1), coalesce(classification, '')"
        " FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results WHERE item_id = ?"
        " GROUP BY name) ORDER BY name";
    struct gates_split g = {passing, failing};

    return store_each_row(st, NULL, gate_json_row, &g, q_gates, STORE_ARGS(STORE_TEXT(item_id)));
}

int store_escalation_packet_artifacts(store *st, const char *goal_id, cJSON *arr)
{
    static const char q_art[] =
        "SELECT type, coalesce(ref, ''), coalesce(path, ''), coalesce(hash, '') FROM artifacts"
        " WHERE goal_id = ? ORDER BY id";
    static const struct store_json_col cols[] = {
        {"type", 0, STORE_JSON_TEXT, NULL},
        {"ref", 1, STORE_JSON_TEXT, NULL},
        {"path", 2, STORE_JSON_TEXT, NULL},
        {"hash", 3, STORE_JSON_TEXT, NULL},
    };

    return store_json_rows(st, arr, cols, 4, q_art, STORE_ARGS(STORE_TEXT(goal_id)));
}

int store_escalation_packet_tool_calls(store *st, const char *run_id, cJSON *arr)
{
    static const char q[] =
        "SELECT tool, args FROM (SELECT id, json_extract(payload, '$.tool') AS tool,"
        " substr(coalesce(json_extract(payload, '$.arguments'), ''), 1, 300) AS args FROM events"
        " WHERE run_id = ? AND type = 'tool_call.started'"
        " AND json_extract(payload, '$.tool') <> 'ask_human' ORDER BY id DESC LIMIT 5) AS last"
        " ORDER BY id";
    static const struct store_json_col cols[] = {
        {"tool", 0, STORE_JSON_TEXT, NULL},
        {"args", 1, STORE_JSON_TEXT, NULL},
    };

    return store_json_rows(st, arr, cols, 2, q, STORE_ARGS(STORE_TEXT(run_id)));
}

int store_escalation_ref_get(store *st, const char *id, struct store_escalation_ref *e)
{
    static const char sql[] =
        "SELECT e.goal_id, coalesce(e.item_id, ''), e.type, e.status, coalesce(w.status, ''),"
        " coalesce(r.kind, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " LEFT JOIN runs r ON r.id = e.run_id WHERE e.id = ?";
    const struct store_text_col cols[] = {
        {e->goal_id, sizeof(e->goal_id)},
        {e->item_id, sizeof(e->item_id)},
        {e->type, sizeof(e->type)},
        {e->status, sizeof(e->status)},
        {e->item_status, sizeof(e->item_status)},
        {e->run_kind, sizeof(e->run_kind)},
    };
    int found;
    int rc;

    memset(e, 0, sizeof(*e));
    rc = store_get_texts(st, NULL, cols, 6, &found, sql, STORE_ARGS(STORE_TEXT(id)));
    if (rc == 0 && found)
        snprintf(e->id, sizeof(e->id), "%s", id); /* truncation: ok, the row was found by this id */
    else if (rc == 0)
        rc = err_set(ERR_NOTFOUND, "escalation %s: not found", id);
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
    int64_t v = 0;
    int found;
    int rc = store_get_int64(st, NULL, &v, &found, sql, STORE_ARGS(STORE_TEXT(goal_id)));

    *yes = v > 0;
    return rc;
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

    return store_ids_args(st, NULL, out, n, q,
                          STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(type), STORE_I64(goal_only)));
}

int store_escalation_goals_past_deadline(store *st, int64_t now_ms, char (*ids)[ID_SIZE], int max,
                                         int *n)
{
    /* on goals_deadline: the few goals with a deadline, not every open one
     * (status as an expression, so that goals_pick does not drive) */
    static const char q[] =
        "SELECT id FROM goals g WHERE is_template = 0 AND deadline_at IS NOT NULL"
        " AND deadline_at < ? AND status || '' IN ('queued','active','blocked')"
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
