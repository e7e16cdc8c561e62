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
            if (status[0] == 'd')
                out->items_done += (int)n;
            else
                out->items_skipped += (int)n;
        }
    }
    store_done(s);
    out->percent = report_percent(out->done_points, out->total_points);
    return rc;
}

static int escalations_json(store *st, const char *goal_id, cJSON **out)
{
    static const char sql[] =
        "SELECT id, item_id, type, severity, urgency, status, created_at,"
        " json_extract(packet, '$.minimal_question') FROM escalations"
        " WHERE goal_id = ? AND status = 'open' ORDER BY created_at, id";
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

static int item_json_cb(const struct work_item *wi, void *vw)
{
    struct jsonw *w = vw;

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
    jsonw_object_end(w);
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
    jsonw_object_end(&w);
    jsonw_key(&w, "work_items");
    jsonw_array_begin(&w);
    rc = store_item_each(st, goal_id, item_json_cb, &w);
    jsonw_array_end(&w);
    if (rc)
        goto out;
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

    fprintf(f, "  %-8s  %-12s  %-6s  %-8d  %-10s  %s\n", wi->key, wi->status, wi->effort,
            wi->attempts, ver, term_view(wi->title)); /* model text: util/termesc.h */
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
    int bar, rc;

    if ((rc = parts_load(st, goal_id, &p)) != 0)
        return rc;
    g = p.goal;
    bar = (int)(p.progress.percent / 5.0 + 0.5);
    fprintf(f, "goal     %s  %s\n", g->id, term_view(g->title));
    fprintf(f, "status   %s%s\n", g->status, g->partial ? " (partial)" : "");
    if (g->branch)
        fprintf(f, "branch   %s\n", term_view(g->branch));
    fputs("progress [", f);
    for (int i = 0; i < 20; i++)
        fputc(i < bar ? '#' : '.', f);
    fprintf(f, "] %.1f%%  %lld of %lld points, %d of %d items finished\n", p.progress.percent,
            p.progress.done_points, p.progress.total_points,
            p.progress.items_done + p.progress.items_skipped, p.progress.items_total);
    if (p.progress.items_total > 0) {
        fprintf(f, "\n  %-8s  %-12s  %-6s  %-8s  %-10s  %s\n", "KEY", "STATUS", "EFFORT",
                "ATTEMPTS", "VERIFIED", "TITLE");
        if ((rc = store_item_each(st, goal_id, item_text_cb, f)) != 0)
            goto out;
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
            fprintf(f, "  %.8s  %-10s %-8s %s\n", jstr(it, "id"), term_view(jstr(it, "type")),
                    term_view(jstr(it, "severity")), term_view(jstr(it, "question")));
        }
    }
    if (cJSON_GetArraySize(p.artifacts) > 0) {
        fputs("\nartifacts\n", f);
        cJSON_ArrayForEach(it, p.artifacts)
        {
            const char *what = *jstr(it, "url")   ? jstr(it, "url")
                               : *jstr(it, "ref") ? jstr(it, "ref")
                                                  : jstr(it, "path");
            fprintf(f, "  %-14s %s %s\n", jstr(it, "type"), term_view(what),
                    term_view(jstr(it, "hash")));
        }
    }
out:
    parts_release(&p);
    return rc;
}
