#include "lifecycle/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/item.h"
#include "util/err.h"
#include "util/jsonw.h"
#include "util/termesc.h"
#include "util/timeutil.h"

double report_percent(long long done_points, long long total_points)
{
    if (total_points <= 0)
        return 0.0;
    return round(1000.0 * (double)done_points / (double)total_points) / 10.0;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static void add_time(cJSON *o, const char *k, int64_t ms)
{
    char buf[TIME_RFC3339_MAX];

    if (ms < 0)
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddStringToObject(o, k, time_format_rfc3339_ms(buf, sizeof(buf), ms));
}

static void add_json_text(cJSON *o, const char *k, const char *text)
{
    cJSON *v = text ? cJSON_Parse(text) : NULL;

    if (v)
        cJSON_AddItemToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

const char *report_goal_status(const struct goal *g)
{
    /* a template is never worked on itself: while it is live (stored
     * queued) it reads "scheduled", not queued forever */
    if (g->is_template && g->status && !strcmp(g->status, "queued"))
        return "scheduled";
    return g->status ? g->status : "";
}

cJSON *report_goal_json(const struct goal *g)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        abort();
    cJSON_AddStringToObject(o, "id", g->id);
    cJSON_AddStringToObject(o, "title", g->title ? g->title : "");
    cJSON_AddStringToObject(o, "status", report_goal_status(g));
    cJSON_AddStringToObject(o, "branch", g->branch ? g->branch : "");
    cJSON_AddBoolToObject(o, "partial", g->partial);
    cJSON_AddStringToObject(o, "description", g->description ? g->description : "");
    cJSON_AddNumberToObject(o, "priority", g->priority);
    add_str_or_null(o, "repo", g->repo);
    add_str_or_null(o, "base_branch", g->base_branch);
    add_str_or_null(o, "parent_id", g->parent_id);
    add_str_or_null(o, "schedule", g->schedule);
    cJSON_AddBoolToObject(o, "template", g->is_template);
    add_str_or_null(o, "outcome", g->outcome);
    add_str_or_null(o, "outcome_reason", g->outcome_reason);
    add_time(o, "deadline", g->deadline_at);
    add_json_text(o, "success_criteria", g->success_criteria);
    add_json_text(o, "verification", g->verification);
    add_json_text(o, "allowed_actions", g->allowed_actions);
    add_json_text(o, "publish", g->publish);
    add_str_or_null(o, "blocked_reason", g->blocked_reason);
    /* issue 16: a goal without a repository is never verified */
    add_str_or_null(o, "unverified_reason", report_unverified_reason(g));
    add_time(o, "created_at", g->created_at);
    add_time(o, "updated_at", g->updated_at);
    add_time(o, "started_at", g->started_at);
    add_time(o, "ended_at", g->ended_at);
    return o;
}

int report_progress(store *st, const char *goal_id, struct report_progress *out)
{
    /* a handful of rows (efforts x statuses); points are mapped in C */
    static const char sql[] = "SELECT effort, status, count(*) FROM work_items"
                              " WHERE goal_id = ? GROUP BY effort, status";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    memset(out, 0, sizeof(*out));
    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    for (;;) {
        int step = sqlite3_step(s);
        const char *status;
        long long n, pts;
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "progress");
            break;
        }
        status = (const char *)sqlite3_column_text(s, 1);
        n = sqlite3_column_int64(s, 2);
        pts = n * item_effort_points((const char *)sqlite3_column_text(s, 0));
        out->items_total += (int)n;
        out->total_points += pts;
        if (!strcmp(status, "done") || !strcmp(status, "skipped")) {
            out->done_points += pts;
            if (status[0] == 'd') {
                out->items_done += (int)n;
            } else {
                out->items_skipped += (int)n;
                out->skipped_points += pts;
            }
        } else if (!strcmp(status, "blocked") || !strcmp(status, "escalated")) {
            out->items_blocked += (int)n;
            out->blocked_points += pts;
        } else if (!strcmp(status, "in_progress") || !strcmp(status, "verify")) {
            out->items_running += (int)n;
        } else if (!strcmp(status, "cancelled")) {
            out->items_cancelled += (int)n;
        }
    }
    store_done(s);
    out->percent = report_percent(out->done_points, out->total_points);
    return rc;
}

const char *report_unverified_reason(const struct goal *g)
{
    return g->repo && *g->repo ? NULL : "no repository";
}

void report_bar(char *out, int width, const struct report_progress *p)
{
    long long tot = p->total_points > 0 ? p->total_points : 1;
    /* cells by cumulative points, so that the parts add up to width */
    int done = (int)((p->done_points - p->skipped_points) * width / tot);
    int skip = (int)(p->done_points * width / tot) - done;
    int blk = (int)((p->done_points + p->blocked_points) * width / tot) - done - skip;
    int i = 0;

    if (p->total_points <= 0)
        done = skip = blk = 0;
    /* a skipped or blocked item is never hidden by rounding */
    if (p->items_skipped && !skip && done + blk < width)
        skip = 1, done -= done + skip + blk > width;
    if (p->items_blocked && !blk && done + skip < width)
        blk = 1, done -= done + skip + blk > width;
    for (; i < done; i++)
        out[i] = '#';
    for (; i < done + skip; i++)
        out[i] = 's';
    for (; i < done + skip + blk; i++)
        out[i] = '!';
    for (; i < width; i++)
        out[i] = '.';
    out[width] = '\0';
}

void report_counts(char *out, size_t n, const struct report_progress *p)
{
    char extra[96] = "";
    int k = 0;

    if (p->items_skipped)
        k += snprintf(extra + k, sizeof(extra) - (size_t)k, ", %d skipped", p->items_skipped);
    if (p->items_blocked)
        k += snprintf(extra + k, sizeof(extra) - (size_t)k, ", %d blocked", p->items_blocked);
    if (p->items_running)
        k += snprintf(extra + k, sizeof(extra) - (size_t)k, ", %d running", p->items_running);
    if (p->items_cancelled)
        snprintf(extra + k, sizeof(extra) - (size_t)k, ", %d cancelled", p->items_cancelled);
    snprintf(out, n, "%d done%s of %d item%s (%lld of %lld points)", p->items_done, extra,
             p->items_total, p->items_total == 1 ? "" : "s", p->done_points, p->total_points);
}

/* Copy column i of the current row into out (n bytes; "" when NULL). */
static void col_copy(char *out, size_t n, sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    snprintf(out, n, "%s", t ? (const char *)t : "");
}

int report_activity(store *st, const char *goal_id, struct report_activity *out)
{
    static const char q_run[] =
        "SELECT r.id, r.kind, ifnull(w.key, ''), ifnull(w.title, ''), r.started_at,"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'turn.started')"
        " FROM runs r LEFT JOIN work_items w ON w.id = r.item_id"
        " WHERE r.goal_id = ? AND r.status = 'running' ORDER BY r.started_at DESC LIMIT 1";
    /* the arguments are kept as JSON text, maybe cut (tools/registry.c) */
    static const char q_tool[] =
        "SELECT tool, CASE WHEN json_valid(a) THEN coalesce(json_extract(a, '$.path'),"
        " json_extract(a, '$.command'), json_extract(a, '$.pattern'),"
        " json_extract(a, '$.summary'), json_extract(a, '$.question'), a) ELSE a END"
        " FROM (SELECT ifnull(json_extract(payload, '$.tool'), '') AS tool,"
        " ifnull(json_extract(payload, '$.arguments'), '') AS a FROM events"
        " WHERE run_id = ? AND type = 'tool_call.started' ORDER BY id DESC LIMIT 1)";
    static const char q_err[] =
        "SELECT ts, type, coalesce(json_extract(payload, '$.reason'),"
        " json_extract(payload, '$.error'), json_extract(payload, '$.tool'), ''),"
        " ifnull(json_extract(payload, '$.tool'), '') FROM events"
        " WHERE goal_id = ? AND type IN ('run.failed', 'run.timeout', 'run.aborted',"
        " 'tool_call.failed') ORDER BY id DESC LIMIT 1";
    static const char q_esc[] =
        "SELECT count(*) FROM escalations WHERE goal_id = ? AND status = 'open'";
    sqlite3_stmt *s;
    int rc;

    memset(out, 0, sizeof(*out));
    out->run_started_at = out->last_error_at = -1;
    if ((rc = store_prepare(st, &s, q_run)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        col_copy(out->run_id, sizeof(out->run_id), s, 0);
        col_copy(out->kind, sizeof(out->kind), s, 1);
        col_copy(out->item_key, sizeof(out->item_key), s, 2);
        col_copy(out->item_title, sizeof(out->item_title), s, 3);
        out->run_started_at =
            sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 4);
        out->turn = sqlite3_column_int(s, 5);
    }
    store_done(s);
    if (out->run_id[0]) {
        if ((rc = store_prepare(st, &s, q_tool)) != 0)
            return rc;
        store_bind_text(s, 1, out->run_id);
        if (sqlite3_step(s) == SQLITE_ROW) {
            col_copy(out->tool, sizeof(out->tool), s, 0);
            col_copy(out->tool_arg, sizeof(out->tool_arg), s, 1);
        }
        store_done(s);
    }
    if ((rc = store_prepare(st, &s, q_err)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(s, 1);
        const char *why = (const char *)sqlite3_column_text(s, 2);
        const char *tool = (const char *)sqlite3_column_text(s, 3);
        out->last_error_at = sqlite3_column_int64(s, 0);
        if (!strcmp(type, "tool_call.failed"))
            snprintf(out->last_error, sizeof(out->last_error), "tool %s: %s", tool, why);
        else
            snprintf(out->last_error, sizeof(out->last_error), "%s: %s", type, why);
    }
    store_done(s);
    if ((rc = store_prepare(st, &s, q_esc)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        out->open_escalations = sqlite3_column_int(s, 0);
    store_done(s);
    return 0;
}

static int escalations_json(store *st, const char *goal_id, cJSON **out)
{
    static const char sql[] =
        "SELECT id, item_id, type, severity, urgency, status, created_at,"
        " json_extract(packet, '$.minimal_question'), json_extract(packet, '$.work_item.key'),"
        " json_extract(packet, '$.work_item.title'), json_extract(packet, '$.last_tool_calls')"
        " FROM escalations WHERE goal_id = ? AND status = 'open' ORDER BY created_at, id";
    sqlite3_stmt *s;
    cJSON *arr = cJSON_CreateArray();
    int rc = store_prepare(st, &s, sql);

    if (rc)
        goto out;
    store_bind_text(s, 1, goal_id);
    for (;;) {
        int step = sqlite3_step(s);
        cJSON *o;
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "escalations");
            break;
        }
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", (const char *)sqlite3_column_text(s, 0));
        add_str_or_null(o, "item_id", (const char *)sqlite3_column_text(s, 1));
        cJSON_AddStringToObject(o, "type", (const char *)sqlite3_column_text(s, 2));
        cJSON_AddStringToObject(o, "severity", (const char *)sqlite3_column_text(s, 3));
        cJSON_AddStringToObject(o, "urgency", (const char *)sqlite3_column_text(s, 4));
        cJSON_AddStringToObject(o, "status", (const char *)sqlite3_column_text(s, 5));
        add_time(o, "created_at", sqlite3_column_int64(s, 6));
        add_str_or_null(o, "question", (const char *)sqlite3_column_text(s, 7));
        if (sqlite3_column_type(s, 8) != SQLITE_NULL) {
            /* what the question is about: the item and, for an agent's
             * question, its last tool calls */
            cJSON *ctx = cJSON_AddObjectToObject(o, "context");
            cJSON *calls = sqlite3_column_type(s, 10) == SQLITE_NULL
                               ? NULL
                               : cJSON_Parse((const char *)sqlite3_column_text(s, 10));
            cJSON_AddStringToObject(ctx, "item_key", (const char *)sqlite3_column_text(s, 8));
            add_str_or_null(ctx, "item_title", (const char *)sqlite3_column_text(s, 9));
            cJSON_AddItemToObject(ctx, "last_tool_calls",
                                  cJSON_IsArray(calls) ? calls : cJSON_CreateArray());
            if (calls && !cJSON_IsArray(calls))
                cJSON_Delete(calls);
        }
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
out:
    if (rc)
        cJSON_Delete(arr);
    else
        *out = arr;
    return rc;
}

static int artifacts_json(store *st, const char *goal_id, cJSON **out)
{
    static const char sql[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                              " FROM artifacts WHERE goal_id = ? ORDER BY id";
    sqlite3_stmt *s;
    cJSON *arr = cJSON_CreateArray();
    int rc = store_prepare(st, &s, sql);

    if (rc)
        goto out;
    store_bind_text(s, 1, goal_id);
    for (;;) {
        int step = sqlite3_step(s);
        cJSON *o;
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "artifacts");
            break;
        }
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", (const char *)sqlite3_column_text(s, 0));
        add_str_or_null(o, "ref", (const char *)sqlite3_column_text(s, 1));
        add_str_or_null(o, "path", (const char *)sqlite3_column_text(s, 2));
        add_str_or_null(o, "hash", (const char *)sqlite3_column_text(s, 3));
        add_str_or_null(o, "url", (const char *)sqlite3_column_text(s, 4));
        add_str_or_null(o, "item_id", (const char *)sqlite3_column_text(s, 5));
        add_time(o, "created_at", sqlite3_column_int64(s, 6));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
out:
    if (rc)
        cJSON_Delete(arr);
    else
        *out = arr;
    return rc;
}

/* Everything of a report but the items, gathered before writing so that a
 * failing query writes nothing. */
struct report_parts {
    struct goal *goal;
    struct report_progress progress;
    cJSON *escalations;
    cJSON *artifacts;
};

static void parts_release(struct report_parts *p)
{
    store_goal_free(p->goal);
    cJSON_Delete(p->escalations);
    cJSON_Delete(p->artifacts);
    memset(p, 0, sizeof(*p));
}

static int parts_load(store *st, const char *goal_id, struct report_parts *p)
{
    int rc;

    memset(p, 0, sizeof(*p));
    if ((rc = store_goal_get(st, goal_id, &p->goal)) == 0 &&
        (rc = report_progress(st, goal_id, &p->progress)) == 0 &&
        (rc = escalations_json(st, goal_id, &p->escalations)) == 0)
        rc = artifacts_json(st, goal_id, &p->artifacts);
    if (rc)
        parts_release(p);
    return rc;
}

static void write_raw_cjson(struct jsonw *w, const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);

    if (!t)
        abort();
    jsonw_raw(w, t);
    cJSON_free(t);
}

static void spent_limit(struct jsonw *w, const char *key, double spent, double limit)
{
    jsonw_key(w, key);
    jsonw_object_begin(w);
    jsonw_key(w, "spent");
    jsonw_double(w, spent);
    jsonw_key(w, "limit");
    if (limit < 0)
        jsonw_null(w);
    else
        jsonw_double(w, limit);
    jsonw_object_end(w);
}

/* The latest "verification" decision of an item (verify.c): its baseline,
 * granularity, test cases and changed gate inputs; NULL when none. */
static cJSON *item_verification(store *st, const char *item_id)
{
    static const char q[] = "SELECT data FROM decisions WHERE item_id = ? AND kind = 'verification'"
                            " ORDER BY id DESC LIMIT 1";
    sqlite3_stmt *s;
    cJSON *d = NULL;

    if (store_prepare(st, &s, q) != 0) {
        err_clear();
        return NULL;
    }
    store_bind_text(s, 1, item_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        d = cJSON_Parse((const char *)sqlite3_column_text(s, 0));
    store_done(s);
    return d;
}

/* One query's first column, parsed as JSON (NULL when no row). */
static cJSON *query_json(store *st, const char *sql, const char *arg)
{
    sqlite3_stmt *s;
    cJSON *d = NULL;

    if (store_prepare(st, &s, sql) != 0) {
        err_clear();
        return NULL;
    }
    store_bind_text(s, 1, arg);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        d = cJSON_Parse((const char *)sqlite3_column_text(s, 0));
    store_done(s);
    return d;
}

/* The failures a partial goal was completed with ([] when none). */
static cJSON *partial_failures(store *st, const char *goal_id)
{
    static const char q[] = "SELECT json_extract(data, '$.partial_failures') FROM decisions"
                            " WHERE goal_id = ? AND kind = 'final_check'"
                            " AND json_extract(data, '$.partial') ORDER BY id DESC LIMIT 1";
    cJSON *d = query_json(st, q, goal_id);

    if (!cJSON_IsArray(d)) {
        cJSON_Delete(d);
        d = cJSON_CreateArray();
    }
    return d;
}

/* The evidence table: one row per (criterion, done item). */
static cJSON *evidence_rows(store *st, const char *goal_id)
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
    cJSON *d = query_json(st, q, goal_id);

    if (!cJSON_IsArray(d)) {
        cJSON_Delete(d);
        d = cJSON_CreateArray();
    }
    return d;
}

struct item_cb {
    struct jsonw *w;
    store *st;
};

static void write_list(struct jsonw *w, const char *key, const cJSON *d)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);

    jsonw_key(w, key);
    if (cJSON_IsArray(v))
        write_raw_cjson(w, v);
    else
        jsonw_raw(w, "[]");
}

static int item_json_cb(const struct work_item *wi, void *varg)
{
    struct item_cb *cb = varg;
    struct jsonw *w = cb->w;
    cJSON *v = item_verification(cb->st, wi->id);

    jsonw_object_begin(w);
    jsonw_key(w, "id");
    jsonw_string(w, wi->id);
    jsonw_key(w, "key");
    jsonw_string(w, wi->key);
    jsonw_key(w, "title");
    jsonw_string(w, wi->title);
    jsonw_key(w, "status");
    jsonw_string(w, wi->status);
    jsonw_key(w, "effort");
    jsonw_string(w, wi->effort);
    jsonw_key(w, "points");
    jsonw_int(w, item_effort_points(wi->effort));
    jsonw_key(w, "type");
    jsonw_string(w, wi->type);
    jsonw_key(w, "priority");
    jsonw_int(w, wi->priority);
    jsonw_key(w, "critical");
    jsonw_bool(w, wi->critical);
    jsonw_key(w, "attempts");
    jsonw_int(w, wi->attempts);
    jsonw_key(w, "tier");
    jsonw_int(w, wi->tier);
    jsonw_key(w, "verified");
    jsonw_bool(w, wi->verified == 1);
    jsonw_key(w, "unverified");
    jsonw_bool(w, wi->verified == 0);
    jsonw_key(w, "commit");
    jsonw_string(w, wi->commit_sha);
    jsonw_key(w, "question");
    jsonw_string(w, wi->question);
    /* issue 15: what the item was verified against (docs/report-json.md) */
    jsonw_key(w, "baseline");
    jsonw_string(w, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "baseline")));
    jsonw_key(w, "granularity");
    jsonw_string(w, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "granularity")));
    write_list(w, "introduced", v);
    write_list(w, "pre_existing", v);
    write_list(w, "fixed", v);
    write_list(w, "gate_inputs_changed", v);
    jsonw_key(w, "tests_weakened");
    jsonw_bool(w, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "tests_weakened")));
    jsonw_object_end(w);
    cJSON_Delete(v);
    return ferror(w->f) ? err_set(ERR_IO, "write error") : 0;
}

int report_write_json(store *st, const char *goal_id, FILE *out)
{
    struct report_parts p;
    struct jsonw w;
    cJSON *gj;
    int rc;

    if ((rc = parts_load(st, goal_id, &p)) != 0)
        return rc;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_key(&w, "goal");
    gj = report_goal_json(p.goal);
    write_raw_cjson(&w, gj);
    cJSON_Delete(gj);
    jsonw_key(&w, "progress");
    jsonw_object_begin(&w);
    jsonw_key(&w, "done_points");
    jsonw_int(&w, p.progress.done_points);
    jsonw_key(&w, "total_points");
    jsonw_int(&w, p.progress.total_points);
    jsonw_key(&w, "percent");
    jsonw_double(&w, p.progress.percent);
    jsonw_key(&w, "items_total");
    jsonw_int(&w, p.progress.items_total);
    jsonw_key(&w, "items_done");
    jsonw_int(&w, p.progress.items_done);
    jsonw_key(&w, "items_skipped");
    jsonw_int(&w, p.progress.items_skipped);
    jsonw_key(&w, "items_blocked");
    jsonw_int(&w, p.progress.items_blocked);
    jsonw_key(&w, "items_running");
    jsonw_int(&w, p.progress.items_running);
    jsonw_key(&w, "items_cancelled");
    jsonw_int(&w, p.progress.items_cancelled);
    jsonw_key(&w, "skipped_points");
    jsonw_int(&w, p.progress.skipped_points);
    jsonw_key(&w, "blocked_points");
    jsonw_int(&w, p.progress.blocked_points);
    jsonw_object_end(&w);
    jsonw_key(&w, "work_items");
    jsonw_array_begin(&w);
    {
        struct item_cb cb = {&w, st};
        rc = store_item_each(st, goal_id, item_json_cb, &cb);
    }
    jsonw_array_end(&w);
    if (rc)
        goto out;
    {
        cJSON *pf = partial_failures(st, goal_id), *ev = evidence_rows(st, goal_id);
        jsonw_key(&w, "partial_failures");
        write_raw_cjson(&w, pf);
        jsonw_key(&w, "evidence");
        write_raw_cjson(&w, ev);
        cJSON_Delete(pf);
        cJSON_Delete(ev);
    }
    jsonw_key(&w, "budget");
    jsonw_object_begin(&w);
    spent_limit(&w, "tokens", (double)p.goal->spent_tokens, (double)p.goal->budget_max_tokens);
    spent_limit(&w, "cost_usd", p.goal->spent_cost_usd, p.goal->budget_max_cost_usd);
    spent_limit(&w, "wall_seconds", (double)p.goal->spent_wall_ms / 1000.0,
                p.goal->budget_max_hours < 0 ? -1 : p.goal->budget_max_hours * 3600);
    jsonw_object_end(&w);
    jsonw_key(&w, "escalations");
    write_raw_cjson(&w, p.escalations);
    jsonw_key(&w, "artifacts");
    write_raw_cjson(&w, p.artifacts);
    jsonw_object_end(&w);
    fputc('\n', out);
out:
    parts_release(&p);
    return rc;
}

static int item_text_cb(const struct work_item *wi, void *vf)
{
    FILE *f = vf;
    const char *ver = wi->verified == 1 ? "yes" : wi->verified == 0 ? "UNVERIFIED" : "-";

    /* 80 columns: the title gets what the other columns leave */
    fprintf(f, "  %-8s  %-12s  %-6s  %-8d  %-10s  %s\n", term_fit(wi->key, 8), wi->status,
            wi->effort, wi->attempts, ver, term_fit(wi->title, 24)); /* util/termesc.h */
    return ferror(f) ? err_set(ERR_IO, "write error") : 0;
}

static void budget_line(FILE *f, const char *label, const char *fmt, double spent, double limit)
{
    char s[64], l[64];

    snprintf(s, sizeof(s), fmt, spent);
    if (limit >= 0)
        snprintf(l, sizeof(l), fmt, limit);
    else
        snprintf(l, sizeof(l), "no limit");
    fprintf(f, "  %-12s %s / %s\n", label, s, l);
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

int report_write_text(store *st, const char *goal_id, FILE *f)
{
    struct report_parts p;
    const struct goal *g;
    const cJSON *it;
    char bar[41], counts[160];
    int rc;

    if ((rc = parts_load(st, goal_id, &p)) != 0)
        return rc;
    g = p.goal;
    report_bar(bar, 40, &p.progress);
    report_counts(counts, sizeof(counts), &p.progress);
    fprintf(f, "goal     %s  %s\n", g->id, term_fit(g->title, 80 - 9 - 38));
    fprintf(f, "status   %s%s%s\n", report_goal_status(g), g->partial ? " (partial)" : "",
            report_unverified_reason(g) ? ", " REPORT_NO_REPO : "");
    if (g->outcome && !strcmp(g->outcome, "nothing_to_do"))
        fprintf(f, "outcome  nothing to do: %s\n", term_fit(g->outcome_reason, 80 - 23));
    if (g->branch)
        fprintf(f, "branch   %s\n", term_fit(g->branch, 80 - 9));
    if (report_unverified_reason(g))
        fputs("publish  n/a (no repository: no branch, commit or pull request)\n", f);
    fprintf(f, "progress [%s] %.1f%%\n         %s\n", bar, p.progress.percent, counts);
    if (p.progress.items_total > 0) {
        fprintf(f, "\n  %-8s  %-12s  %-6s  %-8s  %-10s  %s\n", "KEY", "STATUS", "EFFORT",
                "ATTEMPTS", "VERIFIED", "TITLE");
        if ((rc = store_item_each(st, goal_id, item_text_cb, f)) != 0)
            goto out;
    }
    {
        cJSON *ev = evidence_rows(st, goal_id), *pf = partial_failures(st, goal_id);
        if (cJSON_GetArraySize(ev) > 0) {
            fprintf(f, "\nevidence\n  %-8s  %-30s  %s\n", "ITEM", "CRITERION", "BACKED BY");
            cJSON_ArrayForEach(it, ev)
            {
                const cJSON *b;
                int k = 0;
                strbuf by = STRBUF_INIT;
                strbuf_init(&by, 1 << 16);
                cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(it, "backed_by"))
                    strbuf_addf(&by, "%sgate %s", k++ ? ", " : "", cJSON_GetStringValue(b));
                cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(it, "tests"))
                    strbuf_addf(&by, "%stest %s", k++ ? ", " : "", cJSON_GetStringValue(b));
                /* 80 columns: criterion and evidence cut with an ellipsis */
                fprintf(f, "  %-8s  %-30s  %s\n", term_fit(jstr(it, "item"), 8),
                        term_fit(jstr(it, "criterion"), 30),
                        term_fit(k ? strbuf_cstr(&by) : "none", 80 - 44));
                strbuf_release(&by);
            }
        }
        if (cJSON_GetArraySize(pf) > 0) {
            fputs("\npartial: must-pass gates still failing (pre-existing, not the goal's aim)\n", f);
            cJSON_ArrayForEach(it, pf)
            {
                const cJSON *t;
                int k = 0;
                fprintf(f, "  %s", term_view(jstr(it, "gate")));
                cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(it, "tests"))
                    fprintf(f, "%s%s", k++ ? ", " : ": ", term_view(cJSON_GetStringValue(t)));
                fputc('\n', f);
            }
        }
        cJSON_Delete(ev);
        cJSON_Delete(pf);
    }
    fputs("\nbudget\n", f);
    budget_line(f, "tokens", "%.0f", (double)g->spent_tokens, (double)g->budget_max_tokens);
    budget_line(f, "cost (USD)", "%.4f", g->spent_cost_usd, g->budget_max_cost_usd);
    budget_line(f, "wall (s)", "%.0f", (double)g->spent_wall_ms / 1000.0,
                g->budget_max_hours < 0 ? -1 : g->budget_max_hours * 3600);
    if (cJSON_GetArraySize(p.escalations) > 0) {
        fputs("\nopen escalations\n", f);
        cJSON_ArrayForEach(it, p.escalations)
        {
            const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(it, "context"), *call;
            char line[1024];
            fprintf(f, "  %.8s  %-10s %s\n", jstr(it, "id"), term_fit(jstr(it, "type"), 10),
                    term_fit(jstr(it, "severity"), 8));
            /* the question whole (an agent's own words), wrapped */
            term_wrap(f, jstr(it, "question"), 12, 80);
            if (ctx) {
                snprintf(line, sizeof(line), "%s: %s", jstr(ctx, "item_key"),
                         jstr(ctx, "item_title"));
                fprintf(f, "            item %s\n", term_fit(line, 80 - 17));
                cJSON_ArrayForEach(call, cJSON_GetObjectItemCaseSensitive(ctx, "last_tool_calls"))
                {
                    snprintf(line, sizeof(line), "%s %s", jstr(call, "tool"), jstr(call, "args"));
                    fprintf(f, "            called %s\n", term_fit(line, 80 - 19));
                }
            }
        }
    }
    if (cJSON_GetArraySize(p.artifacts) > 0) {
        fputs("\nartifacts\n", f);
        cJSON_ArrayForEach(it, p.artifacts)
        {
            const char *what = *jstr(it, "url")   ? jstr(it, "url")
                               : *jstr(it, "ref") ? jstr(it, "ref")
                                                  : jstr(it, "path");
            fprintf(f, "  %-14s %s %s\n", jstr(it, "type"), term_fit(what, 50),
                    term_fit(jstr(it, "hash"), 12));
        }
    }
out:
    parts_release(&p);
    return rc;
}

/* `goald report ID --item KEY`: each gate's latest result for the item,
 * its failing test cases and the tail of its output. */
int report_write_item(store *st, const char *goal_id, const char *key, int json, FILE *f)
{
    static const char q_item[] = "SELECT id, status, title FROM work_items WHERE goal_id = ? AND key = ?";
    static const char q_gates[] =
        "SELECT name, passed, ifnull(exit_code, -1), ifnull(classification, ''), tests_passed,"
        " tests_failed, ifnull(output_tail, ''), ifnull(output_hash, ''), ifnull(tree_id, ''),"
        " run_id FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results"
        " WHERE item_id = ?1 AND run_id = (SELECT run_id FROM gate_results WHERE item_id = ?1"
        " ORDER BY id DESC LIMIT 1) GROUP BY name, tree_id) ORDER BY id";
    sqlite3_stmt *s;
    char item_id[ID_SIZE] = "", status[32] = "", title[512] = "";
    cJSON *v = NULL, *out = NULL, *gates;
    int rc;

    if ((rc = store_prepare(st, &s, q_item)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, key);
    if (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(item_id, sizeof(item_id), "%s", sqlite3_column_text(s, 0));
        snprintf(status, sizeof(status), "%s", sqlite3_column_text(s, 1));
        snprintf(title, sizeof(title), "%s", sqlite3_column_text(s, 2));
    }
    store_done(s);
    if (!item_id[0])
        return err_set(ERR_NOTFOUND, "goal %s has no work item \"%s\"", goal_id, key);
    v = item_verification(st, item_id);
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "key", key);
    cJSON_AddStringToObject(out, "id", item_id);
    cJSON_AddStringToObject(out, "title", title);
    cJSON_AddStringToObject(out, "status", status);
    add_str_or_null(out, "baseline", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "baseline")));
    add_str_or_null(out, "granularity",
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "granularity")));
    {
        static const char *lists[] = {"introduced", "pre_existing", "fixed", "gate_inputs_changed"};
        for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(v, lists[i]);
            cJSON_AddItemToObject(out, lists[i],
                                  cJSON_IsArray(l) ? cJSON_Duplicate(l, 1) : cJSON_CreateArray());
        }
    }
    cJSON_AddBoolToObject(out, "tests_weakened",
                          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "tests_weakened")));
    gates = cJSON_AddArrayToObject(out, "gates");
    if ((rc = store_prepare(st, &s, q_gates)) != 0)
        goto out;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *g = cJSON_CreateObject(), *failing = cJSON_CreateArray();
        const char *name = (const char *)sqlite3_column_text(s, 0);
        const char *tail = (const char *)sqlite3_column_text(s, 6);
        const char *tree = (const char *)sqlite3_column_text(s, 8);
        const cJSON *ge;
        size_t n = strlen(tail), from = n > 4000 ? n - 4000 : 0;
        while (from < n && ((unsigned char)tail[from] & 0xc0) == 0x80)
            from++;
        cJSON_AddStringToObject(g, "gate", name);
        cJSON_AddBoolToObject(g, "passed", sqlite3_column_int(s, 1));
        cJSON_AddNumberToObject(g, "exit_code", sqlite3_column_int(s, 2));
        cJSON_AddStringToObject(g, "classification", (const char *)sqlite3_column_text(s, 3));
        cJSON_AddStringToObject(g, "tree_id", tree);
        cJSON_AddBoolToObject(g, "restored_inputs",
                              v && !strcmp(tree, jstr(v, "restored_tree_id")));
        if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
            cJSON_AddNumberToObject(g, "tests_passed", sqlite3_column_int(s, 4));
            cJSON_AddNumberToObject(g, "tests_failed", sqlite3_column_int(s, 5));
        }
        /* its failing test cases, from the item's verification record */
        cJSON_ArrayForEach(ge, cJSON_GetObjectItemCaseSensitive(
                                   v, v && !strcmp(tree, jstr(v, "restored_tree_id"))
                                          ? "restored_inputs_gates"
                                          : "gates"))
        {
            static const char *kinds[] = {"introduced", "new_failing", "pre_existing"};
            if (strcmp(jstr(ge, "gate"), name) != 0)
                continue;
            for (size_t k = 0; k < 3; k++) {
                const cJSON *t;
                cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(ge, kinds[k]))
                    cJSON_AddItemToArray(failing, cJSON_Duplicate(t, 1));
            }
        }
        cJSON_AddItemToObject(g, "failing_tests", failing);
        cJSON_AddStringToObject(g, "output_hash", (const char *)sqlite3_column_text(s, 7));
        cJSON_AddStringToObject(g, "output_tail", tail + from);
        cJSON_AddItemToArray(gates, g);
    }
    store_done(s);
    if (json) {
        char *t = cJSON_PrintUnformatted(out);
        if (!t)
            abort();
        fprintf(f, "%s\n", t);
        cJSON_free(t);
    } else {
        const cJSON *g, *t;
        /* title, test names and gate output come from the model's work:
         * escaped (util/termesc.h) */
        fprintf(f, "item     %s  %s\nstatus   %s\n", term_fit(key, 16), term_fit(title, 80 - 27),
                term_view(status));
        fprintf(f, "baseline %s  (granularity: %s)\n", term_view(jstr(out, "baseline")),
                term_view(jstr(out, "granularity")));
        {
            static const char *lists[] = {"introduced", "pre_existing", "fixed",
                                          "gate_inputs_changed"};
            for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
                const cJSON *l = cJSON_GetObjectItemCaseSensitive(out, lists[i]);
                int k = 0;
                if (cJSON_GetArraySize(l) == 0)
                    continue;
                fprintf(f, "%-20s ", lists[i]);
                cJSON_ArrayForEach(t, l)
                    fprintf(f, "%s%s", k++ ? ", " : "", term_view(cJSON_GetStringValue(t)));
                fputc('\n', f);
            }
        }
        cJSON_ArrayForEach(g, gates)
        {
            int k = 0;
            fprintf(f, "\ngate %s%s: %s (exit %d)%s%s\n", term_view(jstr(g, "gate")),
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "restored_inputs"))
                        ? " (gate inputs restored)"
                        : "",
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "passed")) ? "pass" : "fail",
                    (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "exit_code")),
                    *jstr(g, "classification") ? ", " : "",
                    term_view(jstr(g, "classification")));
            cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(g, "failing_tests"))
                fprintf(f, "%s%s", k++ ? ", " : "failing tests: ",
                        term_view(cJSON_GetStringValue(t)));
            if (k)
                fputc('\n', f);
            fprintf(f, "--- output (tail) ---\n%s\n---\n",
                    term_view_flags(jstr(g, "output_tail"), TERM_KEEP_NL));
        }
    }
    rc = ferror(f) ? err_set(ERR_IO, "write error") : 0;
out:
    cJSON_Delete(v);
    cJSON_Delete(out);
    return rc;
}
