/*
 * routes.c - the /v1 endpoints (docs/http.md), as a table: method, path
 * pattern ({} is one path segment: an id prefix or an item key), the
 * scope needed, the handler.  Reads answer the views the CLI's --json
 * prints (lifecycle/views.h, lifecycle/report.h); writes go through the
 * lifecycle functions the CLI calls, with the same messages, and each is
 * an event naming the token (http_event_write).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/internal.h"
#include "http/webhook.h"
#include "lifecycle/cancel.h"
#include "lifecycle/intake.h"
#include "lifecycle/report.h"
#include "lifecycle/resolve.h"
#include "lifecycle/views.h"
#include "store/escalation.h"
#include "store/goal.h"
#include "util/config.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define MAX_SEGS 6
#define PAGE_DEFAULT 50
#define PAGE_MAX 500
#define Q_MAX 100 /* bytes of ?q= (the Link of the next page holds it encoded) */

typedef void (*route_fn)(struct http_req *r, char seg[][256], struct http_answer *ans);

static const char *query(struct http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Resolve an id prefix of a row of kind into out; 0, or the answer (404,
 * 400). */
static int resolve_id(struct http_req *r, enum store_kind kind, const char *prefix,
                      char out[ID_SIZE], struct http_answer *ans)
{
    int rc = store_resolve_id(r->st, kind, prefix, out);

    if (rc)
        http_answer_err(ans, rc);
    return rc;
}

/* A JSON object (and a newline) a writer streams into a FILE, as the body. */
static void answer_written(struct http_answer *ans, int rc, char *buf, size_t len)
{
    if (rc) {
        free(buf);
        http_answer_err(ans, rc);
        return;
    }
    ans->status = 200;
    ans->body = buf;
    ans->len = len;
    ans->ctype = "application/json";
}

static void get_status(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    (void)seg;
    http_answer_json(ans, 200, view_status(r->st, time_now_ms()));
}

/* ---- goals ---- */

struct page_ctx {
    store *st;
    const char *want, *cursor;
    const char *q; /* a title must hold it (case-insensitive), or NULL */
    int passed;    /* the cursor's goal was seen (or there is no cursor) */
    int limit;
    int64_t now;
    cJSON *arr;
    char last[ID_SIZE];
    int more;
};

static int page_each(const struct goal *g, void *ctx)
{
    struct page_ctx *pc = ctx;

    if (!pc->passed) {
        pc->passed = !strcmp(g->id, pc->cursor);
        return 0;
    }
    if (!view_goal_status_matches(g, pc->want))
        return 0;
    if (pc->q && *pc->q && !strcasestr(g->title, pc->q))
        return 0;
    if (cJSON_GetArraySize(pc->arr) == pc->limit) {
        pc->more = 1;
        return 1;
    }
    cJSON_AddItemToArray(pc->arr, view_goal_listed(pc->st, g, pc->now));
    snprintf(pc->last, sizeof(pc->last), "%s", g->id); /* truncation: ok, an id, ID_SIZE both */
    return 0;
}

/* The page size of ?limit= (PAGE_DEFAULT without; 0 when bad). */
static int page_limit(const char *s)
{
    char *end;
    long n;

    if (!s)
        return PAGE_DEFAULT;
    n = strtol(s, &end, 10);
    return *s && !*end && n >= 1 && n <= PAGE_MAX ? (int)n : 0;
}

/* s (NULL: "") percent-encoded into out (n bytes: 3 a byte of s, and
 * one). */
static void query_encode(char *out, size_t n, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;

    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~';
        if (k + (plain ? 1 : 3) >= n)
            break;
        if (plain) {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = '\0';
}

/* GET /v1/goals?status=&q=&limit=&cursor=: an array (the shape of `goals
 * --json`), newest first, q: only titles holding it (in any case);
 * Link: <...cursor=ID>; rel="next" when more. */
static void get_goals(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    struct page_ctx pc = {.st = r->st, .want = query(r, "status"), .cursor = query(r, "cursor"),
                          .q = query(r, "q")};
    int rc;

    (void)seg;
    if (pc.want && !view_goal_status_valid(pc.want)) {
        http_answer_error(ans, 422, "invalid", "status",
                          "status: expected " VIEW_GOAL_STATUSES ", got \"%s\"", pc.want);
        return;
    }
    if (pc.q && strlen(pc.q) > Q_MAX) {
        http_answer_error(ans, 422, "invalid", "q", "q: at most %d bytes", Q_MAX);
        return;
    }
    if (!(pc.limit = page_limit(query(r, "limit")))) {
        http_answer_error(ans, 422, "invalid", "limit", "limit: expected 1 to %d", PAGE_MAX);
        return;
    }
    pc.passed = !pc.cursor;
    pc.now = time_now_ms();
    pc.arr = cJSON_CreateArray();
    rc = store_goal_each(r->st, view_goal_status_stored(pc.want), page_each, &pc);
    if (rc < 0) {
        cJSON_Delete(pc.arr);
        http_answer_err(ans, rc);
        return;
    }
    if (pc.more) {
        char q[3 * Q_MAX + 1];
        query_encode(q, sizeof(q), pc.q);
        /* truncation: ok, an id, a status and q of at most 300 bytes fit 512 */
        snprintf(ans->link, sizeof(ans->link),
                 "</v1/goals?cursor=%s&limit=%d%s%s%s%s>; rel=\"next\"", pc.last, pc.limit,
                 pc.want ? "&status=" : "", pc.want ? pc.want : "", *q ? "&q=" : "", q);
    }
    http_answer_json(ans, 200, pc.arr);
}

/* The report of goal seg[0] (item_key NULL), or of one of its items, as
 * `report --json` and `report --item KEY --json` write it. */
static void answer_report(struct http_req *r, const char *goal, const char *item_key,
                          struct http_answer *ans)
{
    char id[ID_SIZE], *buf = NULL;
    size_t len = 0;
    FILE *f;
    int rc;

    if (resolve_id(r, STORE_KIND_GOAL, goal, id, ans))
        return;
    f = xcheck(open_memstream(&buf, &len));
    rc = item_key ? report_write_item(r->st, id, item_key, 1, f) : report_write_json(r->st, id, f);
    fclose(f);
    answer_written(ans, rc, buf, len);
}

static void get_goal(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    answer_report(r, seg[0], NULL, ans);
}

static void get_item(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    answer_report(r, seg[0], seg[1], ans);
}

/* Every error of intake_parse_all (one a line, "body: FIELD: message")
 * as {"message", "field"}. */
static cJSON *submit_errors(const char *errs, const char **first_field)
{
    cJSON *arr = cJSON_CreateArray();

    *first_field = NULL;
    for (const char *p = errs, *nl; *p; p = nl + 1) {
        cJSON *e = cJSON_CreateObject();
        const char *f, *colon;
        char *msg;
        nl = strchr(p, '\n');
        if (!nl)
            nl = p + strlen(p) - 1; /* every line ends in a newline; the last kept whole */
        msg = xstrndup(p, (size_t)(nl - p) + (*nl != '\n'));
        cJSON_AddStringToObject(e, "message", msg);
        free(msg);
        f = strstr(p, ": ");
        colon = f && f < nl ? strstr(f + 2, ": ") : NULL;
        if (colon && colon < nl) {
            char *field = xstrndup(f + 2, (size_t)(colon - f - 2));
            cJSON_AddStringToObject(e, "field", field);
            free(field);
        }
        cJSON_AddItemToArray(arr, e);
    }
    if (cJSON_GetArraySize(arr))
        *first_field = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
                                                                "field"));
    return arr;
}

/* 422 with every error, the first also as error.message and .field. */
static void answer_submit_invalid(struct http_answer *ans, const char *errs)
{
    const char *field;
    cJSON *list = submit_errors(errs, &field);
    cJSON *o = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON *first = cJSON_GetArrayItem(list, 0);

    cJSON_AddStringToObject(e, "class", "invalid");
    cJSON_AddStringToObject(e, "message",
                            cJSON_GetStringValue(cJSON_GetObjectItem(first, "message")));
    if (field)
        cJSON_AddStringToObject(e, "field", field);
    cJSON_AddItemToObject(e, "errors", list);
    http_answer_json(ans, 422, o);
}

/* POST /v1/goals: the goal JSON as submit takes it: 201 {"id"}; 403 when
 * it names a repository or a remote outside http.repos / http.remotes
 * (or http.repos is empty). */
static void post_goal(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    strbuf errs = STRBUF_INIT, warns = STRBUF_INIT;
    struct goal *g = NULL;
    char id[ID_SIZE];
    cJSON *o;
    int rc;

    (void)seg;
    strbuf_init(&errs, 1 << 20);
    strbuf_init(&warns, 1 << 16);
    rc = intake_parse_api(&g, strbuf_cstr(&r->body), r->body.len, "body", &errs, &warns);
    if (rc == ERR_POLICY) {
        http_answer_error(ans, 403, "forbidden", NULL, "%s", err_last());
        goto out;
    }
    if (rc && errs.len == 0) {
        http_answer_error(ans, 400, "bad_request", NULL, "%s", err_last());
        goto out;
    }
    if (rc) {
        answer_submit_invalid(ans, strbuf_cstr(&errs));
        goto out;
    }
    if ((rc = intake_submit(r->st, g, id)) != 0) {
        http_answer_err(ans, rc);
        goto out;
    }
    http_event_write(r, id, "submit");
    if (r->srv->wake)
        r->srv->wake(r->st);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddItemToObject(o, "warnings", submit_errors(strbuf_cstr(&warns), &(const char *){0}));
    http_answer_json(ans, 201, o);
out:
    store_goal_free(g);
    strbuf_release(&errs);
    strbuf_release(&warns);
}

/* GET /v1/intake: where a goal submitted here may reach, for the
 * dashboard's submit form: {"submit", "repos", "remotes"} (http.repos and
 * http.remotes, which hold no credential: util/config.c refuses one). */
static void get_intake(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    const cJSON *repos = config_json(CFG_HTTP_REPOS), *remotes = config_json(CFG_HTTP_REMOTES);
    cJSON *o = cJSON_CreateObject();

    (void)r;
    (void)seg;
    cJSON_AddBoolToObject(o, "submit", cJSON_GetArraySize(repos) > 0);
    cJSON_AddItemToObject(o, "repos", repos ? cJSON_Duplicate(repos, 1)
                                            : cJSON_CreateArray());
    cJSON_AddItemToObject(o, "remotes", remotes ? cJSON_Duplicate(remotes, 1)
                                                : cJSON_CreateArray());
    http_answer_json(ans, 200, o);
}

/* POST /v1/goals/{id}/cancel: 409 when it already ended. */
static void post_cancel(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    char id[ID_SIZE];
    int n = 0, jobs = 0, rc;
    cJSON *o;

    if (resolve_id(r, STORE_KIND_GOAL, seg[0], id, ans))
        return;
    if ((rc = lifecycle_goal_cancel(r->st, id, &n, &jobs)) != 0) {
        http_answer_err(ans, rc);
        return;
    }
    http_event_write(r, id, "cancel");
    if (r->srv->wake)
        r->srv->wake(r->st);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "status", "cancelled");
    cJSON_AddNumberToObject(o, "items_cancelled", n);
    cJSON_AddNumberToObject(o, "jobs_stopped", jobs);
    http_answer_json(ans, 200, o);
}

/* ---- escalations ---- */

static int esc_each(const struct store_escalation *e, void *ctx)
{
    cJSON_AddItemToArray((cJSON *)ctx, view_escalation(e));
    return 0;
}

static void get_escalations(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    const char *all = query(r, "all");
    cJSON *arr = cJSON_CreateArray();
    int rc;

    (void)seg;
    rc = store_escalation_each_listed(r->st, all && strcmp(all, "0") && strcmp(all, "false"),
                                      esc_each, arr);
    if (rc) {
        cJSON_Delete(arr);
        http_answer_err(ans, rc);
        return;
    }
    http_answer_json(ans, 200, arr);
}

/* POST /v1/escalations/{id}/resolve {"action", "input"?}. */
static void post_resolve(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    cJSON *body = cJSON_ParseWithLength(strbuf_cstr(&r->body), r->body.len), *o;
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "action"));
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(body, "input");
    struct resolve_result res;
    char id[ID_SIZE];
    int rc;

    if (!cJSON_IsObject(body) || !action) {
        http_answer_error(ans, 422, "invalid", "action",
                          "action: required (retry, skip, alternative, increase_budget, "
                          "complete_partial, pause, accept_test_changes)");
        goto out;
    }
    if (input && !cJSON_IsNull(input) && !cJSON_IsString(input)) {
        http_answer_error(ans, 422, "invalid", "input", "input: expected a string");
        goto out;
    }
    if (resolve_id(r, STORE_KIND_ESCALATION, seg[0], id, ans))
        goto out;
    if ((rc = lifecycle_resolve(r->st, id, action, cJSON_GetStringValue(input), &res)) != 0) {
        http_answer_err(ans, rc);
        goto out;
    }
    http_event_write(r, res.goal_id, "resolve");
    if (r->srv->wake)
        r->srv->wake(r->st);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "action", action);
    cJSON_AddStringToObject(o, "goal_id", res.goal_id);
    cJSON_AddStringToObject(o, "goal_status", res.goal_status);
    http_answer_json(ans, 200, o);
out:
    cJSON_Delete(body);
}

/* ---- the table ---- */

/* the description and the event stream take no path segments */
static void get_openapi(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    (void)r;
    (void)seg;
    http_openapi(ans);
}

static void get_events(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    (void)seg;
    http_sse_events(r, ans);
}

static const struct route {
    const char *method, *path;
    int scope;
    route_fn fn;
} routes[] = {
    {"GET", "/v1/status", SCOPE_READ, get_status},
    {"GET", "/v1/overview", SCOPE_READ, http_get_overview},
    {"GET", "/v1/goals", SCOPE_READ, get_goals},
    {"POST", "/v1/goals", SCOPE_SUBMIT, post_goal},
    {"GET", "/v1/intake", SCOPE_READ, get_intake},
    {"GET", "/v1/goals/{}", SCOPE_READ, get_goal},
    {"GET", "/v1/goals/{}/items/{}", SCOPE_READ, get_item},
    {"POST", "/v1/goals/{}/cancel", SCOPE_SUBMIT, post_cancel},
    {"GET", "/v1/escalations", SCOPE_READ, get_escalations},
    {"POST", "/v1/escalations/{}/resolve", SCOPE_RESOLVE, post_resolve},
    {"GET", "/v1/events", SCOPE_READ, get_events},
    {"GET", "/v1/openapi.json", SCOPE_READ, get_openapi},
    {"POST", HTTP_WEBHOOK_PATH, SCOPE_NONE, http_forge_webhook}, /* signed, no token */
};

/* Does url match pattern?  The {} segments go to seg, in order. */
static int match(const char *pattern, const char *url, char seg[][256])
{
    int k = 0;

    while (*pattern && *url) {
        if (!strncmp(pattern, "{}", 2)) {
            size_t n = strcspn(url, "/");
            if (n == 0 || n >= 256 || k == MAX_SEGS)
                return 0;
            memcpy(seg[k], url, n);
            seg[k++][n] = '\0';
            url += n;
            pattern += 2;
        } else if (*pattern++ != *url++) {
            return 0;
        }
    }
    return !*pattern && !*url;
}

/* Does the route answer method?  HEAD is answered where GET is (as GET:
 * libmicrohttpd sends the headers without the body). */
static int method_is(const char *route_method, const char *method)
{
    return !strcmp(route_method, method) ||
           (!strcmp(route_method, "GET") && !strcmp(method, "HEAD"));
}

/* Add m (and HEAD after GET) to the Allow list of a 405. */
static void allow_add(char *allow, size_t n, const char *m)
{
    size_t k = strlen(allow);

    if (strstr(allow, m))
        return;
    /* truncation: ok, all the methods fit 64 bytes */
    snprintf(allow + k, n - k, "%s%s%s", k ? ", " : "", m, strcmp(m, "GET") ? "" : ", HEAD");
}

void http_route(struct http_req *r, struct http_answer *ans)
{
    char seg[MAX_SEGS][256];
    int path_found = 0;

    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (!match(routes[i].path, r->url, seg))
            continue;
        path_found = 1;
        allow_add(ans->allow, sizeof(ans->allow), routes[i].method);
        if (!method_is(routes[i].method, r->method))
            continue;
        ans->allow[0] = '\0';
        if (!http_scope_has(r, routes[i].scope)) {
            http_answer_error(ans, 403, "forbidden", NULL,
                              "this token lacks the scope %s (it has %s)",
                              http_scope_name(routes[i].scope), r->tok.scopes);
            return;
        }
        routes[i].fn(r, seg, ans);
        return;
    }
    if (path_found) {
        http_answer_error(ans, 405, "method_not_allowed", NULL, "%s is not allowed on %s (%s)",
                          r->method, r->url, ans->allow);
        return;
    }
    ans->allow[0] = '\0';
    http_answer_error(ans, 404, "not_found", NULL, "no such route: %s %s", r->method, r->url);
}
