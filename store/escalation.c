/* escalation.c - the escalations and decisions tables (see escalation.h). */
#include "store/escalation.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

#define TXT(s, i) ((const char *)sqlite3_column_text((s), (i)))

/* Step s to its end: each row filled into a struct by fill, handed to fn.
 * The statement is done here. */
static int escalation_rows(store *st, sqlite3_stmt *s,
                           void (*fill)(struct store_escalation *e, sqlite3_stmt *s),
                           int (*fn)(const struct store_escalation *e, void *ctx), void *ctx)
{
    int rc = 0;

    for (;;) {
        struct store_escalation e;
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "escalations");
            break;
        }
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
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_esc);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = sqlite3_column_int(s, 0);
    else
        rc = store_err(st, "count escalations");
    store_done(s);
    return rc;
}

static void fill_open_of_goal(struct store_escalation *e, sqlite3_stmt *s)
{
    e->id = TXT(s, 0);
    e->item_id = TXT(s, 1);
    e->type = TXT(s, 2);
    e->severity = TXT(s, 3);
    e->urgency = TXT(s, 4);
    e->status = TXT(s, 5);
    e->created_at = sqlite3_column_int64(s, 6);
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
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    return escalation_rows(st, s, fill_open_of_goal, fn, ctx);
}

static void fill_listed(struct store_escalation *e, sqlite3_stmt *s)
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
    e->created_at = sqlite3_column_int64(s, 9);
    e->goal_title = TXT(s, 10);
    e->item_key = TXT(s, 11);
}

int store_escalation_each_listed(store *st, int all,
                                 int (*fn)(const struct store_escalation *e, void *ctx),
                                 void *ctx)
{
    static const char q_open[] =
        "SELECT e.id, e.goal_id, ifnull(e.item_id, ''), e.type, e.severity, e.urgency, e.status,"
        " ifnull(e.resolution, ''), e.packet, e.created_at, g.title, ifnull(w.key, '')"
        " FROM escalations e JOIN goals g ON g.id = e.goal_id"
        " LEFT JOIN work_items w ON w.id = e.item_id WHERE e.status = 'open'"
        " ORDER BY e.created_at, e.id";
    static const char q_all[] =
        "SELECT e.id, e.goal_id, ifnull(e.item_id, ''), e.type, e.severity, e.urgency, e.status,"
        " ifnull(e.resolution, ''), e.packet, e.created_at, g.title, ifnull(w.key, '')"
        " FROM escalations e JOIN goals g ON g.id = e.goal_id"
        " LEFT JOIN work_items w ON w.id = e.item_id ORDER BY e.created_at, e.id";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, all ? q_all : q_open);

    if (rc)
        return rc;
    return escalation_rows(st, s, fill_listed, fn, ctx);
}

static void fill_open_question(struct store_escalation *e, sqlite3_stmt *s)
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
        "SELECT e.type, ifnull(w.key, ''), coalesce(json_extract(e.packet, '$.minimal_question'),"
        " w.question, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " WHERE e.goal_id = ? AND e.status = 'open' ORDER BY e.created_at, e.id LIMIT ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    sqlite3_bind_int(s, 2, limit);
    return escalation_rows(st, s, fill_open_question, fn, ctx);
}

/* The first column of sql's first row (arg bound as ?1), parsed as JSON:
 * *out NULL when there is no row, the column is NULL or not JSON. */
static int decision_json(store *st, const char *sql, const char *arg, cJSON **out)
{
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    *out = NULL;
    if (rc)
        return rc;
    store_bind_text(s, 1, arg);
    switch (sqlite3_step(s)) {
    case SQLITE_ROW:
        if (sqlite3_column_text(s, 0))
            *out = cJSON_Parse(TXT(s, 0));
        break;
    case SQLITE_DONE:
        break;
    default:
        rc = store_err(st, "decisions");
    }
    store_done(s);
    return rc;
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
                            " AND json_extract(data, '$.partial') ORDER BY id DESC LIMIT 1";

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
    static const char q[] =
        "SELECT json_group_array(json_object('criterion', d.note, 'item', w.key,"
        " 'evidence', ifnull(json_extract(d.data, '$.evidence'),"
        "   CASE WHEN json_extract(d.data, '$.unverified') THEN 'none' ELSE 'gates' END),"
        " 'backed_by', json(ifnull(json_extract(d.data, '$.backed_by'), '[]')),"
        " 'tests', json(ifnull(json_extract(d.data, '$.tests'), '[]'))))"
        " FROM decisions d JOIN work_items w ON w.id = d.item_id"
        " WHERE d.goal_id = ?1 AND d.kind = 'evidence' AND w.status = 'done' AND d.id IN"
        " (SELECT max(id) FROM decisions WHERE goal_id = ?1 AND kind = 'evidence'"
        "  GROUP BY item_id, note) ORDER BY w.created_at, w.rowid, d.id";

    return decision_json(st, q, goal_id, out);
}

/* Step s (goal_id bound as ?1 and ?2 by the caller when it has them) to
 * its end: each row filled by fill, handed to fn; s is done here. */
static int decision_rows(store *st, sqlite3_stmt *s,
                         void (*fill)(struct store_decision *d, sqlite3_stmt *s),
                         int (*fn)(const struct store_decision *d, void *ctx), void *ctx)
{
    int rc = 0;

    for (;;) {
        struct store_decision d;
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "decisions");
            break;
        }
        memset(&d, 0, sizeof(d));
        fill(&d, s);
        if ((rc = fn(&d, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}

static void fill_evidence(struct store_decision *d, sqlite3_stmt *s)
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
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_evidence);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, goal_id);
    return decision_rows(st, s, fill_evidence, fn, ctx);
}

static void fill_inputs(struct store_decision *d, sqlite3_stmt *s)
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
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_inputs);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, goal_id);
    return decision_rows(st, s, fill_inputs, fn, ctx);
}

static void fill_review(struct store_decision *d, sqlite3_stmt *s)
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
        "SELECT w.key, d.kind, ifnull(d.aspect, ''), ifnull(d.severity, ''), ifnull(d.note, '')"
        " FROM decisions d JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ?"
        " AND d.kind IN ('review_verdict', 'review_finding', 'review_unavailable') ORDER BY d.id";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_review);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    return decision_rows(st, s, fill_review, fn, ctx);
}

int store_decision_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                       const char *kind, const char *aspect, const char *severity, const char *note,
                       const struct cJSON *data)
{
    static const char sql[] =
        "INSERT INTO decisions(goal_id, item_id, run_id, kind, aspect, severity, note, data,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    char *text = data ? cJSON_PrintUnformatted(data) : NULL;
    int rc = store_prepare(st, &s, sql);

    if (rc == 0) {
        store_bind_text(s, 1, goal_id);
        store_bind_text(s, 2, item_id);
        store_bind_text(s, 3, run_id);
        store_bind_text(s, 4, kind);
        store_bind_text(s, 5, aspect);
        store_bind_text(s, 6, severity);
        store_bind_text(s, 7, note);
        store_bind_text(s, 8, text ? text : "{}");
        sqlite3_bind_int64(s, 9, time_now_ms());
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "decision");
        store_done(s);
    }
    cJSON_free(text);
    return rc;
}

int store_decision_first_verification_baseline(store *st, const char *goal_id, char *out, size_t n)
{
    static const char q[] = "SELECT json_extract(data, '$.baseline') FROM decisions"
                            " WHERE goal_id = ? AND kind = 'verification'"
                            " AND json_extract(data, '$.baseline') IS NOT NULL ORDER BY id LIMIT 1";
    sqlite3_stmt *s;
    int rc;

    out[0] = '\0';
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, n, "%s", sqlite3_column_text(s, 0));
    store_done(s);
    return 0;
}

int store_escalation_count_open_all(store *st, int64_t *out)
{
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, "SELECT count(*) FROM escalations WHERE status = 'open'");

    *out = 0;
    if (rc)
        return rc;
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    else
        rc = store_err(st, "escalations");
    store_done(s);
    return rc;
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
    sqlite3_stmt *s, *u;
    int rc = store_prepare(st, &s, sel);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    while (rc == 0 && sqlite3_step(s) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if ((rc = store_prepare(st, &u, upd)) == 0) {
            store_bind_text(u, 1, reason);
            sqlite3_bind_int64(u, 2, now_ms);
            store_bind_text(u, 3, id);
            rc = sqlite3_step(u) == SQLITE_DONE ? 0 : store_err(st, "escalation");
            store_done(u);
        }
        if (rc == 0)
            rc = fn(id, (const char *)sqlite3_column_text(s, 1), ctx);
    }
    store_done(s);
    return rc;
}
