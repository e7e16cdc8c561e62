/*
 * report.c - what a goal has come to (see report.h): progress, items,
 * evidence, budget, escalations and artifacts, as JSON or as text, and one
 * item's gates (`goald report ID --item KEY`).
 *
 * Every fact comes from the store's typed getters, one entity at a time
 * (store/goal, item, run, event, escalation, gate_result, artifact); this
 * file only shapes them.  Text from a model or a goal is escaped for the
 * terminal (util/termesc.h).
 */
#include "lifecycle/report.h"
#include "lifecycle/report_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/artifact.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "store/run.h"
#include "store/status.h"
#include "util/err.h"
#include "util/jsonobj.h"
#include "util/jsonw.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

double report_percent(long long done_points, long long total_points)
{
    if (total_points <= 0)
        return 0.0;
    return round(1000.0 * (double)done_points / (double)total_points) / 10.0;
}

void report_add_time(cJSON *o, const char *k, int64_t ms)
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
    if (g->is_template && g->status && goal_status_of(g->status) == GOAL_QUEUED)
        return "scheduled";
    return g->status ? g->status : "";
}

cJSON *report_goal_json(const struct goal *g)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "id", g->id);
    cJSON_AddStringToObject(o, "title", g->title ? g->title : "");
    cJSON_AddStringToObject(o, "status", report_goal_status(g));
    cJSON_AddStringToObject(o, "branch", g->branch ? g->branch : "");
    cJSON_AddBoolToObject(o, "partial", g->partial);
    cJSON_AddStringToObject(o, "description", g->description ? g->description : "");
    cJSON_AddNumberToObject(o, "priority", g->priority);
    jsonobj_add_str_or_null(o, "repo", g->repo);
    jsonobj_add_str_or_null(o, "base_branch", g->base_branch);
    jsonobj_add_str_or_null(o, "parent_id", g->parent_id);
    jsonobj_add_str_or_null(o, "schedule", g->schedule);
    cJSON_AddBoolToObject(o, "template", g->is_template);
    jsonobj_add_str_or_null(o, "outcome", g->outcome);
    jsonobj_add_str_or_null(o, "outcome_reason", g->outcome_reason);
    report_add_time(o, "deadline", g->deadline_at);
    add_json_text(o, "success_criteria", g->success_criteria);
    add_json_text(o, "verification", g->verification);
    add_json_text(o, "allowed_actions", g->allowed_actions);
    add_json_text(o, "publish", g->publish);
    jsonobj_add_str_or_null(o, "blocked_reason", g->blocked_reason);
    /* A goal without a repository is never verified */
    jsonobj_add_str_or_null(o, "unverified_reason", report_unverified_reason(g));
    report_add_time(o, "created_at", g->created_at);
    report_add_time(o, "updated_at", g->updated_at);
    report_add_time(o, "started_at", g->started_at);
    report_add_time(o, "ended_at", g->ended_at);
    return o;
}

/* Add n items of effort and status to the progress in ctx. */
static int progress_add(const char *effort, const char *status, int64_t n, void *ctx)
{
    struct report_progress *out = ctx;
    long long pts = n * item_effort_points(effort);

    out->items_total += (int)n;
    out->total_points += pts;
    switch (item_status_of(status)) {
    case ITEM_DONE:
        out->done_points += pts;
        out->items_done += (int)n;
        break;
    case ITEM_SKIPPED:
        /* skipped is not done: counted apart, never in the percentage */
        out->items_skipped += (int)n;
        out->skipped_points += pts;
        break;
    case ITEM_BLOCKED:
    case ITEM_ESCALATED:
        out->items_blocked += (int)n;
        out->blocked_points += pts;
        break;
    case ITEM_IN_PROGRESS:
    case ITEM_VERIFY:
        out->items_running += (int)n;
        break;
    case ITEM_CANCELLED:
        out->items_cancelled += (int)n;
        break;
    default:
        break;
    }
    return 0;
}

int report_progress(store *st, const char *goal_id, struct report_progress *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    rc = store_item_count_by_effort_status(st, goal_id, progress_add, out);
    out->percent = report_percent(out->done_points, out->total_points);
    return rc;
}

cJSON *report_progress_json(const struct report_progress *p)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddNumberToObject(o, "done_points", (double)p->done_points);
    cJSON_AddNumberToObject(o, "total_points", (double)p->total_points);
    cJSON_AddNumberToObject(o, "percent", p->percent);
    cJSON_AddNumberToObject(o, "items_total", p->items_total);
    cJSON_AddNumberToObject(o, "items_done", p->items_done);
    cJSON_AddNumberToObject(o, "items_skipped", p->items_skipped);
    cJSON_AddNumberToObject(o, "items_blocked", p->items_blocked);
    cJSON_AddNumberToObject(o, "items_running", p->items_running);
    cJSON_AddNumberToObject(o, "items_cancelled", p->items_cancelled);
    cJSON_AddNumberToObject(o, "skipped_points", (double)p->skipped_points);
    cJSON_AddNumberToObject(o, "blocked_points", (double)p->blocked_points);
    return o;
}

const char *report_unverified_reason(const struct goal *g)
{
    return g->repo && *g->repo ? NULL : "no repository";
}

void report_bar(char *out, int width, const struct report_progress *p)
{
    long long tot = p->total_points > 0 ? p->total_points : 1;
    /* cells by cumulative points, so that the parts add up to width */
    int done = (int)(p->done_points * width / tot);
    int skip = (int)((p->done_points + p->skipped_points) * width / tot) - done;
    int blk = (int)((p->done_points + p->skipped_points + p->blocked_points) * width / tot) - done -
              skip;
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
        /* truncation: ok, a count shown */
        snprintf(extra + k, sizeof(extra) - (size_t)k, ", %d cancelled", p->items_cancelled);
    /* truncation: ok, a line shown */
    snprintf(out, n, "%d done%s of %d item%s (%lld of %lld points)", p->items_done, extra,
             p->items_total, p->items_total == 1 ? "" : "s", p->done_points, p->total_points);
}

/* snprintf into out (n bytes), a longer text cut: for a status line, not
 * the record. */
static void format_cut(char *out, size_t n, const char *fmt, ...) GOALD_PRINTF(3, 4);

static void format_cut(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

int report_activity(store *st, const char *goal_id, struct report_activity *out)
{
    struct store_run_running run;
    struct store_event_failure fail;
    int found, rc;

    memset(out, 0, sizeof(*out));
    out->run_started_at = out->last_error_at = -1;
    if ((rc = store_run_latest_running(st, goal_id, &run, &found)) != 0)
        return rc;
    if (found) {
        struct store_run_live *all = NULL;
        size_t nall = 0;
        if (store_run_running_of_goal(st, goal_id, &all, &nall) == 0 && nall > 1)
            out->others_running = (int)nall - 1;
        err_clear();
        free(all);
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(out->run_id, sizeof(out->run_id), "%s", run.id);
        snprintf(out->kind, sizeof(out->kind), "%s", run.kind); /* truncation: ok, a kind shown */
        /* truncation: ok, shown */
        snprintf(out->item_key, sizeof(out->item_key), "%s", run.item_key);
        /* truncation: ok, shown */
        snprintf(out->item_title, sizeof(out->item_title), "%s", run.item_title);
        out->run_started_at = run.started_at;
        out->turn = run.turns_started;
    }
    if (out->run_id[0] &&
        (rc = store_event_last_tool_call(st, out->run_id, out->tool, sizeof(out->tool),
                                         out->tool_arg, sizeof(out->tool_arg))) != 0)
        return rc;
    if ((rc = store_event_last_failure(st, goal_id, &fail, &found)) != 0)
        return rc;
    if (found) {
        out->last_error_at = fail.ts;
        if (!strcmp(fail.type, "tool_call.failed"))
            format_cut(out->last_error, sizeof(out->last_error), "tool %s: %s", fail.tool,
                       fail.why);
        else
            format_cut(out->last_error, sizeof(out->last_error), "%s: %s", fail.type, fail.why);
    }
    return store_escalation_count_open(st, goal_id, &out->open_escalations);
}

/* One open escalation as the report's JSON object, appended to ctx. */
static int escalation_json_cb(const struct store_escalation *e, void *ctx)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "id", e->id);
    jsonobj_add_str_or_null(o, "item_id", e->item_id);
    cJSON_AddStringToObject(o, "type", e->type);
    cJSON_AddStringToObject(o, "severity", e->severity);
    cJSON_AddStringToObject(o, "urgency", e->urgency);
    cJSON_AddStringToObject(o, "status", e->status);
    report_add_time(o, "created_at", e->created_at);
    jsonobj_add_str_or_null(o, "question", e->question);
    if (e->item_key) {
        /* what the question is about: the item and, for an agent's
         * question, its last tool calls */
        cJSON *cx = cJSON_AddObjectToObject(o, "context");
        cJSON *calls = e->last_tool_calls ? cJSON_Parse(e->last_tool_calls) : NULL;
        cJSON_AddStringToObject(cx, "item_key", e->item_key);
        jsonobj_add_str_or_null(cx, "item_title", e->item_title);
        cJSON_AddItemToObject(cx, "last_tool_calls",
                              cJSON_IsArray(calls) ? calls : cJSON_CreateArray());
        if (calls && !cJSON_IsArray(calls))
            cJSON_Delete(calls);
    }
    cJSON_AddItemToArray(ctx, o);
    return 0;
}

/* One artifact as the report's JSON object, appended to ctx. */
static int artifact_json_cb(const struct store_artifact *a, void *ctx)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "type", a->type);
    jsonobj_add_str_or_null(o, "ref", a->ref);
    jsonobj_add_str_or_null(o, "path", a->path);
    jsonobj_add_str_or_null(o, "hash", a->hash);
    jsonobj_add_str_or_null(o, "url", a->url);
    jsonobj_add_str_or_null(o, "item_id", a->item_id);
    report_add_time(o, "created_at", a->created_at);
    cJSON_AddItemToArray(ctx, o);
    return 0;
}

/* Everything of a report but the items, gathered before writing so that a
 * failing query writes nothing: its open escalations and its artifacts as
 * the report's JSON arrays. */
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
    p->escalations = cJSON_CreateArray();
    p->artifacts = cJSON_CreateArray();
    if ((rc = store_goal_get(st, goal_id, &p->goal)) == 0 &&
        (rc = report_progress(st, goal_id, &p->progress)) == 0 &&
        (rc = store_escalation_each_open_of_goal(st, goal_id, escalation_json_cb,
                                                 p->escalations)) == 0)
        rc = store_artifact_each(st, goal_id, NULL, artifact_json_cb, p->artifacts);
    if (rc)
        parts_release(p);
    return rc;
}

static void write_raw_cjson(struct jsonw *w, const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);

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
 * granularity, test cases and changed gate inputs; NULL when none (or
 * when it cannot be read: the report shows what it has). */
cJSON *report_item_verification(store *st, const char *item_id)
{
    cJSON *d = NULL;

    if (store_decision_latest_verification(st, item_id, &d) != 0)
        err_clear();
    return d;
}

/* d when it is an array, else (deleted) an empty array. */
static cJSON *array_or_empty(cJSON *d)
{
    if (!cJSON_IsArray(d)) {
        cJSON_Delete(d);
        d = cJSON_CreateArray();
    }
    return d;
}

/* The failures a partial goal was completed with ([] when none). */
static cJSON *partial_failures(store *st, const char *goal_id)
{
    cJSON *d = NULL;

    if (store_decision_partial_failures(st, goal_id, &d) != 0)
        err_clear();
    return array_or_empty(d);
}

/* The evidence table: one row per (criterion, done item). */
static cJSON *evidence_rows(store *st, const char *goal_id)
{
    cJSON *d = NULL;

    if (store_decision_evidence_rows(st, goal_id, &d) != 0)
        err_clear();
    d = array_or_empty(d);
    if (report_evaluation_rows(st, goal_id, d) != 0)
        err_clear();
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

static int dep_key_cb(const char *key, void *w)
{
    jsonw_string(w, key);
    return 0;
}

static int item_json_cb(const struct work_item *wi, void *varg)
{
    struct item_cb *cb = varg;
    struct jsonw *w = cb->w;
    cJSON *v = report_item_verification(cb->st, wi->id);
    int rc;

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
    jsonw_key(w, "depends_on");
    jsonw_array_begin(w);
    rc = store_item_dep_keys_each(cb->st, wi->id, dep_key_cb, w);
    jsonw_array_end(w);
    /* What the item was verified against (docs/report-json.md) */
    jsonw_key(w, "baseline");
    jsonw_string(w, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "baseline")));
    jsonw_key(w, "granularity");
    jsonw_string(w, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "granularity")));
    write_list(w, "introduced", v);
    write_list(w, "pre_existing", v);
    write_list(w, "fixed", v);
    write_list(w, "gate_inputs_changed", v);
    write_list(w, "fail_to_pass", v);
    write_list(w, "not_exercising", v);
    write_list(w, "accepted_test_changes", v);
    jsonw_key(w, "tests_weakened");
    jsonw_bool(w, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "tests_weakened")));
    jsonw_object_end(w);
    cJSON_Delete(v);
    if (rc)
        return rc;
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
    gj = report_progress_json(&p.progress);
    write_raw_cjson(&w, gj);
    cJSON_Delete(gj);
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
        cJSON *why = report_partial_reasons(st, goal_id);
        jsonw_key(&w, "partial_failures");
        write_raw_cjson(&w, pf);
        jsonw_key(&w, "partial_reasons");
        write_raw_cjson(&w, why);
        cJSON_Delete(why);
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

    snprintf(s, sizeof(s), fmt, spent); /* truncation: ok, a number shown */
    if (limit >= 0)
        snprintf(l, sizeof(l), fmt, limit); /* truncation: ok, a number shown */
    else
        snprintf(l, sizeof(l), "no limit"); /* truncation: ok, a constant that fits */
    fprintf(f, "  %-12s %s / %s\n", label, s, l);
}

const char *report_jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The head of the text report: goal, status, outcome, branch, progress. */
static void text_head(FILE *f, const struct goal *g, const struct report_progress *pr)
{
    char bar[41], counts[160];

    report_bar(bar, 40, pr);
    report_counts(counts, sizeof(counts), pr);
    fprintf(f, "goal     %s  %s\n", g->id, term_fit(g->title, 80 - 9 - 38));
    fprintf(f, "status   %s%s%s\n", report_goal_status(g), g->partial ? " (partial)" : "",
            report_unverified_reason(g) ? ", " REPORT_NO_REPO : "");
    if (g->outcome && !strcmp(g->outcome, "nothing_to_do"))
        fprintf(f, "outcome  nothing to do: %s\n", term_fit(g->outcome_reason, 80 - 23));
    if (g->branch)
        fprintf(f, "branch   %s\n", term_fit(g->branch, 80 - 9));
    if (report_unverified_reason(g))
        fputs("publish  n/a (no repository: no branch, commit or pull request)\n", f);
    fprintf(f, "progress [%s] %.1f%%\n         %s\n", bar, pr->percent, counts);
}

/* The evidence table: criterion, its kind and what backs it, per item
 * that serves it (rows written before kinds: the gates and tests). */
static void text_evidence(FILE *f, const cJSON *ev)
{
    const cJSON *it;

    if (cJSON_GetArraySize(ev) == 0)
        return;
    fprintf(f, "\nevidence\n  %-8s  %-26s  %-9s  %s\n", "ITEM", "CRITERION", "KIND",
            "BACKED BY");
    cJSON_ArrayForEach(it, ev)
    {
        const cJSON *b;
        int k = 0;
        strbuf by = STRBUF_INIT;
        strbuf_init(&by, 1 << 16);
        cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(it, "backed_by"))
            strbuf_addf_cut(&by, "%sgate %s", k++ ? ", " : "", cJSON_GetStringValue(b));
        cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(it, "tests"))
            strbuf_addf_cut(&by, "%stest %s", k++ ? ", " : "", cJSON_GetStringValue(b));
        if (k == 0 && report_jstr(it, "backing")[0]) {
            strbuf_adds_cut(&by, report_jstr(it, "backing"));
            k = 1;
        }
        /* 80 columns: criterion and evidence cut with an ellipsis */
        fprintf(f, "  %-8s  %-26s  %-9s  %s\n",
                term_fit(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "item"))
                             ? report_jstr(it, "item")
                             : "(goal)",
                         8),
                term_fit(report_jstr(it, "criterion"), 26), term_fit(report_jstr(it, "kind"), 9),
                term_fit(k ? strbuf_cstr(&by) : "none", 80 - 51));
        strbuf_release(&by);
    }
}

/* A section of the text report over the array items: its heading after
 * a blank line, and 1; or nothing, and 0, when items is empty. */
static int text_section(FILE *f, const cJSON *items, const char *heading)
{
    if (cJSON_GetArraySize(items) == 0)
        return 0;
    fprintf(f, "\n%s\n", heading);
    return 1;
}

/* The criteria that leave the goal partial, one a line (wrapped). */
static void text_partial_reasons(FILE *f, store *st, const char *goal_id)
{
    cJSON *why = report_partial_reasons(st, goal_id);
    const cJSON *r;

    if (text_section(f, why, "partial: criteria not proven"))
        cJSON_ArrayForEach(r, why) fprintf(f, "  - %s\n", r->valuestring);
    cJSON_Delete(why);
}

/* The must-pass gates a partial goal still fails, with their tests. */
static void text_partial(FILE *f, const cJSON *pf)
{
    const cJSON *it;

    if (!text_section(f, pf,
                      "partial: must-pass gates still failing (pre-existing, not the goal's aim)"))
        return;
    cJSON_ArrayForEach(it, pf)
    {
        const cJSON *t;
        int k = 0;
        fprintf(f, "  %s", term_view(report_jstr(it, "gate")));
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(it, "tests"))
            fprintf(f, "%s%s", k++ ? ", " : ": ", term_view(cJSON_GetStringValue(t)));
        fputc('\n', f);
    }
}

static void text_budget(FILE *f, const struct goal *g)
{
    fputs("\nbudget\n", f);
    budget_line(f, "tokens", "%.0f", (double)g->spent_tokens, (double)g->budget_max_tokens);
    budget_line(f, "cost (USD)", "%.4f", g->spent_cost_usd, g->budget_max_cost_usd);
    budget_line(f, "wall (s)", "%.0f", (double)g->spent_wall_ms / 1000.0,
                g->budget_max_hours < 0 ? -1 : g->budget_max_hours * 3600);
}

/* The open escalations: the question whole, the item and its last calls. */
static void text_escalations(FILE *f, const cJSON *escalations)
{
    const cJSON *it;

    if (!text_section(f, escalations, "open escalations"))
        return;
    cJSON_ArrayForEach(it, escalations)
    {
        const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(it, "context"), *call;
        char line[1024];
        fprintf(f, "  %.8s  %-10s %s\n", report_jstr(it, "id"), term_fit(report_jstr(it, "type"), 10),
                term_fit(report_jstr(it, "severity"), 8));
        /* the question whole (an agent's own words), wrapped */
        term_wrap(f, report_jstr(it, "question"), 12, 80);
        if (!ctx)
            continue;
        /* truncation: ok, a line shown */
        snprintf(line, sizeof(line), "%s: %s", report_jstr(ctx, "item_key"), report_jstr(ctx, "item_title"));
        fprintf(f, "            item %s\n", term_fit(line, 80 - 17));
        cJSON_ArrayForEach(call, cJSON_GetObjectItemCaseSensitive(ctx, "last_tool_calls"))
        {
            /* truncation: ok, a line shown */
            snprintf(line, sizeof(line), "%s %s", report_jstr(call, "tool"), report_jstr(call, "args"));
            fprintf(f, "            called %s\n", term_fit(line, 80 - 19));
        }
    }
}

static void text_artifacts(FILE *f, const cJSON *artifacts)
{
    const cJSON *it;

    if (!text_section(f, artifacts, "artifacts"))
        return;
    cJSON_ArrayForEach(it, artifacts)
    {
        const char *what = *report_jstr(it, "url")   ? report_jstr(it, "url")
                           : *report_jstr(it, "ref") ? report_jstr(it, "ref")
                                              : report_jstr(it, "path");
        fprintf(f, "  %-14s %s %s\n", report_jstr(it, "type"), term_fit(what, 50),
                term_fit(report_jstr(it, "hash"), 12));
    }
}

int report_write_text(store *st, const char *goal_id, FILE *f)
{
    struct report_parts p;
    cJSON *ev, *pf;
    int rc;

    if ((rc = parts_load(st, goal_id, &p)) != 0)
        return rc;
    text_head(f, p.goal, &p.progress);
    if (p.progress.items_total > 0) {
        fprintf(f, "\n  %-8s  %-12s  %-6s  %-8s  %-10s  %s\n", "KEY", "STATUS", "EFFORT",
                "ATTEMPTS", "VERIFIED", "TITLE");
        if ((rc = store_item_each(st, goal_id, item_text_cb, f)) != 0)
            goto out;
    }
    ev = evidence_rows(st, goal_id);
    pf = partial_failures(st, goal_id);
    text_evidence(f, ev);
    text_partial(f, pf);
    text_partial_reasons(f, st, goal_id);
    cJSON_Delete(ev);
    cJSON_Delete(pf);
    text_budget(f, p.goal);
    text_escalations(f, p.escalations);
    text_artifacts(f, p.artifacts);
out:
    parts_release(&p);
    return rc;
}
