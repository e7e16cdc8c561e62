/*
 * routes_status.c - GET /v1/overview, the dashboard's first page: what
 * `goald status --json` says (lifecycle/views.h), and with it each node's
 * health (alive, stale or dead), this server's version, the goals by
 * status, the failed runs, tokens and cost of the last 24 hours, and the
 * caller's token (its name and scopes: the page offers only what the
 * token may do).
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "http/internal.h"
#include "lifecycle/views.h"
#include "store/goal.h"
#include "store/run.h"
#include "util/config.h"
#include "util/err.h"
#include "util/id.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define DAY_MS ((int64_t)86400000)
/* a node silent for this many stale periods is dead, not only late */
#define DEAD_AFTER_STALE 10

/* alive (running), dead (its pid gone on this host, or silent for
 * DEAD_AFTER_STALE stale periods), else stale. */
static const char *node_health(const cJSON *n, const char *this_host)
{
    const char *state = cJSON_GetStringValue(cJSON_GetObjectItem(n, "state"));
    const char *host = cJSON_GetStringValue(cJSON_GetObjectItem(n, "host"));
    double age = cJSON_GetNumberValue(cJSON_GetObjectItem(n, "tick_age_ms"));
    double pid = cJSON_GetNumberValue(cJSON_GetObjectItem(n, "pid"));

    if (state && !strcmp(state, "running"))
        return "alive";
    if (age > (double)config_int(CFG_DAEMON_STALE_S) * 1000 * DEAD_AFTER_STALE)
        return "dead";
    if (host && !strcmp(host, this_host) && pid > 0 && kill((pid_t)pid, 0) != 0)
        return "dead";
    return "stale";
}

static void add_health(cJSON *o)
{
    char host[256] = "";
    cJSON *n, *d = cJSON_GetObjectItem(o, "daemon");

    id_host(host, sizeof(host));
    cJSON_ArrayForEach(n, cJSON_GetObjectItem(o, "nodes"))
        cJSON_AddStringToObject(n, "health", node_health(n, host));
    if (cJSON_GetObjectItem(d, "tick_age_ms"))
        cJSON_AddStringToObject(d, "health", node_health(d, host));
    else
        cJSON_AddStringToObject(d, "health", "dead");
}

/* {"queued": N, ...} for each stored goal status; -1 when unread. */
static void add_goals(store *st, cJSON *o)
{
    static const char *const statuses[] = {"queued", "active", "blocked", "completed", "cancelled"};
    cJSON *g = cJSON_AddObjectToObject(o, "goals");

    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        int64_t n = -1;
        if (store_goal_count(st, statuses[i], &n) != 0) {
            n = -1;
            err_clear();
        }
        cJSON_AddNumberToObject(g, statuses[i], (double)n);
    }
}

static void add_window(store *st, int64_t now, cJSON *o)
{
    struct store_run_window w;
    char t[TIME_RFC3339_MAX];
    cJSON *d = cJSON_AddObjectToObject(o, "last_24h");

    if (store_run_window_totals(st, now - DAY_MS, &w) != 0) {
        w.failed = w.tokens = w.cost_micro_usd = -1;
        err_clear();
    }
    cJSON_AddStringToObject(d, "since", time_format_rfc3339_ms(t, sizeof(t), now - DAY_MS));
    cJSON_AddNumberToObject(d, "runs_failed", (double)w.failed);
    cJSON_AddNumberToObject(d, "tokens", (double)w.tokens);
    cJSON_AddNumberToObject(d, "cost_usd",
                            w.cost_micro_usd < 0 ? -1 : (double)w.cost_micro_usd / 1e6);
}

/* the caller's token: name and scopes, as a list */
static void add_token(const struct http_req *r, cJSON *o)
{
    cJSON *t = cJSON_AddObjectToObject(o, "token");
    cJSON *sc = cJSON_AddArrayToObject(t, "scopes");
    static const int all[] = {SCOPE_READ, SCOPE_SUBMIT, SCOPE_RESOLVE};

    cJSON_AddStringToObject(t, "name", r->tok.name);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (http_scope_has(r, all[i]))
            cJSON_AddItemToArray(sc, cJSON_CreateString(http_scope_name(all[i])));
}

void http_get_overview(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    int64_t now = time_now_ms();
    cJSON *o = view_status(r->st, now);

    (void)seg;
    add_health(o);
    cJSON_AddStringToObject(o, "version", GOALD_VERSION);
    add_goals(r->st, o);
    add_window(r->st, now, o);
    add_token(r, o);
    http_answer_json(ans, 200, o);
}
