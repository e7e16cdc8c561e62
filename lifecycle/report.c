#include "lifecycle/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/item.h"
#include "util/err.h"
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
        cJSON_AddStringToObject(o, k, time_format_rfc3339(buf, sizeof(buf), ms));
}

static void add_json_text(cJSON *o, const char *k, const char *text)
{
    cJSON *v = text ? cJSON_Parse(text) : NULL;

    if (v)
        cJSON_AddItemToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

cJSON *report_goal_json(const struct goal *g)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        abort();
    cJSON_AddStringToObject(o, "id", g->id);
    cJSON_AddStringToObject(o, "title", g->title ? g->title : "");
    cJSON_AddStringToObject(o, "status", g->status ? g->status : "");
    cJSON_AddStringToObject(o, "branch", g->branch ? g->branch : "");
    cJSON_AddBoolToObject(o, "partial", g->partial);
    cJSON_AddStringToObject(o, "description", g->description ? g->description : "");
    cJSON_AddNumberToObject(o, "priority", g->priority);
    add_str_or_null(o, "repo", g->repo);
    add_str_or_null(o, "base_branch", g->base_branch);
    add_str_or_null(o, "parent_id", g->parent_id);
    add_str_or_null(o, "schedule", g->schedule);
    cJSON_AddBoolToObject(o, "template", g->is_template);
    add_time(o, "deadline", g->deadline_at);
    add_json_text(o, "success_criteria", g->success_criteria);
    add_json_text(o, "verification", g->verification);
    add_json_text(o, "allowed_actions", g->allowed_actions);
    add_json_text(o, "publish", g->publish);
    add_str_or_null(o, "blocked_reason", g->blocked_reason);
    add_time(o, "created_at", g->created_at);
    add_time(o, "updated_at", g->updated_at);
    add_time(o, "started_at", g->started_at);
    add_time(o, "ended_at", g->ended_at);
    return o;
}

struct items_ctx {
    cJSON *arr;
    long long done_points, total_points;
    int n, n_done, n_skipped;
};

static int item_cb(const struct work_item *wi, void *vctx)
{
    struct items_ctx *c = vctx;
    int pts = item_effort_points(wi->effort);
    cJSON *o = cJSON_CreateObject();

    if (!o)
        abort();
    c->n++;
    c->total_points += pts;
    if (!strcmp(wi->status, "done") || !strcmp(wi->status, "skipped")) {
        c->done_points += pts;
        if (wi->status[0] == 'd')
            c->n_done++;
        else
            c->n_skipped++;
    }
    cJSON_AddStringToObject(o, "id", wi->id);
    cJSON_AddStringToObject(o, "key", wi->key);
    cJSON_AddStringToObject(o, "title", wi->title);
    cJSON_AddStringToObject(o, "status", wi->status);
    cJSON_AddStringToObject(o, "effort", wi->effort);
    cJSON_AddNumberToObject(o, "points", pts);
    cJSON_AddStringToObject(o, "type", wi->type);
    cJSON_AddNumberToObject(o, "priority", wi->priority);
    cJSON_AddBoolToObject(o, "critical", wi->critical);
    cJSON_AddNumberToObject(o, "attempts", wi->attempts);
    cJSON_AddNumberToObject(o, "tier", wi->tier);
    cJSON_AddBoolToObject(o, "verified", wi->verified == 1);
    cJSON_AddBoolToObject(o, "unverified", wi->verified == 0);
    add_str_or_null(o, "commit", wi->commit_sha);
    add_str_or_null(o, "question", wi->question);
    cJSON_AddItemToArray(c->arr, o);
    return 0;
}

static int add_escalations(store *st, const char *goal_id, cJSON *arr)
{
    static const char sql[] =
        "SELECT id, item_id, type, severity, urgency, status, created_at,"
        " json_extract(packet, '$.minimal_question') FROM escalations"
        " WHERE goal_id = ? AND status = 'open' ORDER BY created_at, id";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
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
        if (!o)
            abort();
        cJSON_AddStringToObject(o, "id", (const char *)sqlite3_column_text(s, 0));
        add_str_or_null(o, "item_id", (const char *)sqlite3_column_text(s, 1));
        cJSON_AddStringToObject(o, "type", (const char *)sqlite3_column_text(s, 2));
        cJSON_AddStringToObject(o, "severity", (const char *)sqlite3_column_text(s, 3));
        cJSON_AddStringToObject(o, "urgency", (const char *)sqlite3_column_text(s, 4));
        cJSON_AddStringToObject(o, "status", (const char *)sqlite3_column_text(s, 5));
        add_time(o, "created_at", sqlite3_column_int64(s, 6));
        add_str_or_null(o, "question", (const char *)sqlite3_column_text(s, 7));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return rc;
}

static int add_artifacts(store *st, const char *goal_id, cJSON *arr)
{
    static const char sql[] = "SELECT type, ref, path, hash, url, item_id, created_at"
                              " FROM artifacts WHERE goal_id = ? ORDER BY id";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
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
        if (!o)
            abort();
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
    return rc;
}

static cJSON *spent_limit(double spent, double limit)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        abort();
    cJSON_AddNumberToObject(o, "spent", spent);
    if (limit < 0)
        cJSON_AddNullToObject(o, "limit");
    else
        cJSON_AddNumberToObject(o, "limit", limit);
    return o;
}

int report_build(store *st, const char *goal_id, cJSON **out)
{
    struct goal *g = NULL;
    struct items_ctx ic = {0};
    cJSON *r = NULL, *p, *b, *esc, *art;
    int rc;

    if ((rc = store_goal_get(st, goal_id, &g)) != 0)
        return rc;
    r = cJSON_CreateObject();
    if (!r)
        abort();
    cJSON_AddItemToObject(r, "goal", report_goal_json(g));
    p = cJSON_AddObjectToObject(r, "progress");
    ic.arr = cJSON_AddArrayToObject(r, "work_items");
    if ((rc = store_item_each(st, goal_id, item_cb, &ic)) != 0)
        goto out;
    cJSON_AddNumberToObject(p, "done_points", (double)ic.done_points);
    cJSON_AddNumberToObject(p, "total_points", (double)ic.total_points);
    cJSON_AddNumberToObject(p, "percent", report_percent(ic.done_points, ic.total_points));
    cJSON_AddNumberToObject(p, "items_total", ic.n);
    cJSON_AddNumberToObject(p, "items_done", ic.n_done);
    cJSON_AddNumberToObject(p, "items_skipped", ic.n_skipped);

    b = cJSON_AddObjectToObject(r, "budget");
    cJSON_AddItemToObject(b, "tokens",
                          spent_limit((double)g->spent_tokens, (double)g->budget_max_tokens));
    cJSON_AddItemToObject(b, "cost_usd", spent_limit(g->spent_cost_usd, g->budget_max_cost_usd));
    cJSON_AddItemToObject(b, "wall_seconds",
                          spent_limit((double)g->spent_wall_ms / 1000.0,
                                      g->budget_max_hours < 0 ? -1 : g->budget_max_hours * 3600));
    esc = cJSON_AddArrayToObject(r, "escalations");
    if ((rc = add_escalations(st, goal_id, esc)) != 0)
        goto out;
    art = cJSON_AddArrayToObject(r, "artifacts");
    if ((rc = add_artifacts(st, goal_id, art)) != 0)
        goto out;
    *out = r;
    r = NULL;
out:
    cJSON_Delete(r);
    store_goal_free(g);
    return rc;
}
