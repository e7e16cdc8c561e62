/* The JSON views shared by the CLI and the HTTP API (lifecycle/views.h). */
#include "lifecycle/views.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/monitor.h"
#include "lifecycle/report.h"
#include "lifecycle/transitions.h"
#include "store/breaker.h"
#include "store/heartbeat.h"
#include "store/run.h"
#include "util/config.h"
#include "util/err.h"
#include "util/id.h"
#include "util/jsonobj.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* A node's heartbeat as JSON into d: state running (fresh, and its pid
 * alive when it runs on this host), else stale; pid, host, times. */
static void node_fill(cJSON *d, const struct store_heartbeat *hb, int64_t now)
{
    char t[TIME_RFC3339_MAX], host[256] = "";
    int64_t age = now - hb->last_tick;
    int alive = age <= config_int(CFG_DAEMON_STALE_S) * 1000;

    id_host(host, sizeof(host));
    if (hb->host && !strcmp(hb->host, host))
        alive = alive && kill((pid_t)hb->pid, 0) == 0;
    cJSON_AddStringToObject(d, "state", alive ? "running" : "stale");
    cJSON_AddStringToObject(d, "node_id", hb->node_id ? hb->node_id : "");
    cJSON_AddStringToObject(d, "host", hb->host ? hb->host : "");
    cJSON_AddNumberToObject(d, "pid", (double)hb->pid);
    cJSON_AddStringToObject(d, "started_at", time_format_rfc3339_ms(t, sizeof(t), hb->started_at));
    cJSON_AddStringToObject(d, "last_tick", time_format_rfc3339_ms(t, sizeof(t), hb->last_tick));
    cJSON_AddNumberToObject(d, "tick_age_ms", (double)age);
}

/* This node's daemon (with SQLite the one daemon of the file, whatever
 * node id it has): running, stale, or not running; and the lanes it last
 * reported (NULL when none). */
static cJSON *daemon_state(store *st, int64_t now, cJSON **lanes)
{
    cJSON *d = cJSON_CreateObject();
    struct store_heartbeat hb;
    char node[STORE_NODE_ID_MAX];
    int shared = store_is_url(store_path(st)), rc;

    *lanes = NULL;
    if (shared && store_node_id(node, sizeof(node), store_path(st)) != 0) {
        err_clear();
        node[0] = '\0';
    }
    rc = store_heartbeat_read(st, shared ? node : NULL, &hb);
    if (rc == 0) {
        node_fill(d, &hb, now);
        *lanes = cJSON_Parse(hb.lanes ? hb.lanes : "");
        store_heartbeat_release(&hb);
    } else if (rc == ERR_NOTFOUND) {
        cJSON_AddStringToObject(d, "state", "not running");
    }
    return d;
}

struct nodes_ctx {
    cJSON *nodes;
    int64_t now;
};

static int add_node(const struct store_heartbeat *hb, void *ctx)
{
    struct nodes_ctx *nc = ctx;
    cJSON *n = cJSON_CreateObject(), *lanes = cJSON_Parse(hb->lanes ? hb->lanes : "");

    node_fill(n, hb, nc->now);
    cJSON_AddItemToObject(n, "lanes", lanes ? lanes : cJSON_CreateObject());
    cJSON_AddItemToArray(nc->nodes, n);
    return 0;
}

/* Every node that has a heartbeat, the freshest first. */
static cJSON *nodes_state(store *st, int64_t now)
{
    struct nodes_ctx nc = {cJSON_CreateArray(), now};

    if (store_heartbeat_each(st, add_node, &nc) != 0)
        err_clear();
    return nc.nodes;
}

/* The queues, by the claim rule itself (store_run_queue_counts). */
static void add_queues(store *st, int64_t now, cJSON *o)
{
    struct store_run_queues qs;
    cJSON *q = cJSON_AddObjectToObject(o, "queues");

    if (store_run_queue_counts(st, now, (int)config_int(CFG_GOAL_MAX_PARALLEL_ITEMS), &qs) != 0) {
        qs.plan = qs.work = qs.waiting_on_dependencies = -1;
        err_clear();
    }
    cJSON_AddNumberToObject(q, "plan", (double)qs.plan);
    cJSON_AddNumberToObject(q, "work", (double)qs.work);
    cJSON_AddNumberToObject(q, "waiting_on_dependencies", (double)qs.waiting_on_dependencies);
}

struct jobs_ctx {
    cJSON *jobs;
    int64_t now;
};

static int add_job(const struct store_run_job *r, void *ctx)
{
    struct jobs_ctx *jc = ctx;
    cJSON *j = cJSON_CreateObject();

    cJSON_AddStringToObject(j, "run_id", r->run_id);
    cJSON_AddStringToObject(j, "goal_id", r->goal_id);
    cJSON_AddStringToObject(j, "goal_title", r->goal_title);
    cJSON_AddStringToObject(j, "item_id", r->item_id);
    cJSON_AddStringToObject(j, "item_key", r->item_key);
    cJSON_AddStringToObject(j, "kind", r->kind);
    cJSON_AddStringToObject(j, "lane", r->lane);
    cJSON_AddNumberToObject(j, "pid", (double)r->pid);
    cJSON_AddStringToObject(j, "node_id", r->node_id);
    cJSON_AddNumberToObject(j, "age_s", (double)(jc->now - r->started_at) / 1000);
    cJSON_AddItemToArray(jc->jobs, j);
    return 0;
}

/* o[key] = text, its secrets redacted: a tool's argument or an error
 * quotes what the model wrote or a tool printed. */
static void add_redacted(cJSON *o, const char *key, const char *text)
{
    char *red = xcheck(redact_str(text, NULL));

    cJSON_AddStringToObject(o, key, red);
    free(red);
}

/* The running jobs, and what each is doing now: its turn and last tool
 * call. */
static cJSON *running_jobs(store *st, int64_t now)
{
    struct jobs_ctx jc = {cJSON_CreateArray(), now};
    cJSON *it;

    if (store_run_jobs_each(st, add_job, &jc) != 0)
        err_clear();
    cJSON_ArrayForEach(it, jc.jobs)
    {
        /* each job's own run: a goal may run several items at once */
        const char *run_id = cJSON_GetStringValue(cJSON_GetObjectItem(it, "run_id"));
        struct store_run_running rr;
        char tool[32] = "", arg[256] = "";
        int found = 0;
        if (!run_id || store_run_running_get(st, run_id, &rr, &found) != 0 ||
            store_event_last_tool_call(st, run_id, tool, sizeof(tool), arg, sizeof(arg)) != 0) {
            err_clear();
            continue;
        }
        cJSON_AddNumberToObject(it, "turn", found ? rr.turns_started : 0);
        if (tool[0])
            cJSON_AddStringToObject(it, "last_tool", tool);
        else
            cJSON_AddNullToObject(it, "last_tool");
        add_redacted(it, "last_tool_arg", arg);
    }
    return jc.jobs;
}

/* The last error of any goal: a failed run or tool call. */
static void add_last_error(store *st, cJSON *o)
{
    char gid[ID_SIZE] = "";
    struct report_activity a;

    if (store_event_last_failure_goal(st, gid) != 0) {
        err_clear();
        return;
    }
    if (gid[0] && report_activity(st, gid, &a) == 0 && a.last_error[0]) {
        char t[TIME_RFC3339_MAX];
        cJSON *e = cJSON_AddObjectToObject(o, "last_error");
        cJSON_AddStringToObject(e, "goal_id", gid);
        cJSON_AddStringToObject(e, "time", time_format_rfc3339_ms(t, sizeof(t), a.last_error_at));
        add_redacted(e, "message", a.last_error);
    } else {
        cJSON_AddNullToObject(o, "last_error");
    }
}

static int add_breaker(const struct store_breaker_state *s, void *ctx)
{
    cJSON *b = cJSON_CreateObject();

    cJSON_AddStringToObject(b, "error_class", s->error_class);
    cJSON_AddStringToObject(b, "state", s->state);
    cJSON_AddNumberToObject(b, "failures", s->failures);
    cJSON_AddItemToArray((cJSON *)ctx, b);
    return 0;
}

/* Is run_id among the running jobs (of node, when not NULL)? */
static int job_running(const cJSON *running, const char *run_id, const char *node)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, running)
    {
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(it, "run_id"));
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(it, "node_id"));
        if (r && run_id && !strcmp(r, run_id) && (!node || (n && !strcmp(n, node))))
            return 1;
    }
    return 0;
}

/* A node's lanes as its heartbeat last gave them, less the jobs whose runs
 * the database no longer has running on that node: a dead node's runs that
 * another node recovered (its heartbeat stays as it was when it died), or
 * runs that ended since its last tick; each lane's count is then of the
 * jobs left.  node NULL (SQLite: one daemon, whatever node id a run has):
 * the runs are only looked up. */
static void lanes_trim(cJSON *lanes, const char *node, const cJSON *running)
{
    static const char *const names[] = {"plan", "work"};
    cJSON *jobs = cJSON_GetObjectItem(lanes, "jobs");
    int dropped = 0;

    if (!cJSON_IsArray(jobs))
        return;
    for (int i = cJSON_GetArraySize(jobs) - 1; i >= 0; i--) {
        const cJSON *j = cJSON_GetArrayItem(jobs, i);
        if (!job_running(running, cJSON_GetStringValue(cJSON_GetObjectItem(j, "run_id")), node)) {
            cJSON_DeleteItemFromArray(jobs, i);
            dropped++;
        }
    }
    for (size_t l = 0; dropped && l < sizeof(names) / sizeof(names[0]); l++) {
        cJSON *lane = cJSON_GetObjectItem(lanes, names[l]);
        const cJSON *j;
        int n = 0;
        cJSON_ArrayForEach(j, jobs)
        {
            const char *jl = cJSON_GetStringValue(cJSON_GetObjectItem(j, "lane"));
            n += jl && !strcmp(jl, names[l]);
        }
        if (cJSON_IsObject(lane))
            cJSON_ReplaceItemInObject(lane, "running", cJSON_CreateNumber(n));
    }
}

/* The heartbeats' jobs trimmed to the running runs (lanes_trim): this
 * node's lanes (daemon d) and each node's. */
static void jobs_trim(store *st, const cJSON *d, cJSON *lanes, cJSON *nodes, const cJSON *running)
{
    int shared = store_is_url(store_path(st));
    cJSON *n;

    if (lanes)
        lanes_trim(lanes, shared ? cJSON_GetStringValue(cJSON_GetObjectItem(d, "node_id")) : NULL,
                   running);
    cJSON_ArrayForEach(n, nodes)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(n, "node_id"));
        lanes_trim(cJSON_GetObjectItem(n, "lanes"), shared ? id : NULL, running);
    }
}

cJSON *view_status(store *st, int64_t now)
{
    cJSON *o = cJSON_CreateObject(), *lanes, *br, *d, *nodes, *running;
    int64_t open_esc = 0;

    /* the heartbeats before the runs: a job a heartbeat names was claimed
     * (its run running) before it, so it is missing from the runs only
     * when its run is no longer running */
    d = daemon_state(st, now, &lanes);
    nodes = nodes_state(st, now);
    running = running_jobs(st, now);
    jobs_trim(st, d, lanes, nodes, running);
    cJSON_AddItemToObject(o, "daemon", d);
    add_queues(st, now, o);
    cJSON_AddItemToObject(o, "lanes", lanes ? lanes : cJSON_CreateObject());
    cJSON_AddItemToObject(o, "running", running);
    cJSON_AddItemToObject(o, "nodes", nodes);
    add_last_error(st, o);
    br = cJSON_AddArrayToObject(o, "breakers");
    if (store_breaker_not_closed_each(st, add_breaker, br) != 0)
        err_clear();
    if (store_escalation_count_open_all(st, &open_esc) != 0) {
        open_esc = -1;
        err_clear();
    }
    cJSON_AddNumberToObject(o, "open_escalations", (double)open_esc);
    return o;
}

cJSON *view_escalation(const struct store_escalation *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *packet = cJSON_Parse(e->packet);
    char t[TIME_RFC3339_MAX];

    time_format_rfc3339_ms(t, sizeof(t), e->created_at);

    cJSON_AddStringToObject(o, "id", e->id);
    cJSON_AddStringToObject(o, "goal_id", e->goal_id);
    if (*e->item_id)
        cJSON_AddStringToObject(o, "item_id", e->item_id);
    else
        cJSON_AddNullToObject(o, "item_id");
    cJSON_AddStringToObject(o, "type", e->type);
    cJSON_AddStringToObject(o, "severity", e->severity);
    cJSON_AddStringToObject(o, "urgency", e->urgency);
    cJSON_AddStringToObject(o, "status", e->status);
    cJSON_AddStringToObject(o, "resolution", e->resolution);
    cJSON_AddStringToObject(o, "created_at", t);
    cJSON_AddItemToObject(o, "packet", packet ? packet : cJSON_CreateObject());
    return o;
}

cJSON *view_event(const struct store_event *ev)
{
    char t[TIME_RFC3339_MAX];
    cJSON *o = cJSON_CreateObject();
    cJSON *p = cJSON_Parse(ev->payload ? ev->payload : "{}");

    cJSON_AddNumberToObject(o, "seq", (double)ev->id);
    cJSON_AddStringToObject(o, "time", time_format_rfc3339_ms(t, sizeof(t), ev->ts));
    cJSON_AddStringToObject(o, "type", ev->type);
    jsonobj_add_str_or_null(o, "goal_id", ev->goal_id);
    jsonobj_add_str_or_null(o, "item_id", ev->item_id);
    jsonobj_add_str_or_null(o, "run_id", ev->run_id);
    cJSON_AddItemToObject(o, "payload", p ? p : cJSON_CreateObject());
    return o;
}

/* A duration ("90s", "10m", "2h", "1d") back from now, or an RFC 3339
 * date-time, into *out (ms). */
int view_parse_since(const char *s, int64_t now, int64_t *out)
{
    char *end;
    long long n;
    int64_t unit = 0;

    if (time_parse_rfc3339(out, s) == 0)
        return 0;
    n = strtoll(s, &end, 10);
    if (end == s || n < 0 || end[0] == '\0' || end[1] != '\0')
        return -1;
    switch (*end) {
    case 's':
        unit = 1000;
        break;
    case 'm':
        unit = 60000;
        break;
    case 'h':
        unit = 3600000;
        break;
    case 'd':
        unit = 86400000;
        break;
    default:
        return -1;
    }
    if (n > 3650LL * 86400000 / unit)
        return -1;
    *out = now - n * unit;
    return 0;
}

cJSON *view_goal_listed(store *st, const struct goal *g, int64_t now)
{
    cJSON *o = xcheck(report_goal_json(g));
    char t[TIME_RFC3339_MAX];
    int64_t next = -1;
    struct report_progress p;

    /* the list shows each goal's progress bar: the report's counts */
    if (report_progress(st, g->id, &p) != 0) {
        memset(&p, 0, sizeof(p));
        err_clear();
    }
    cJSON_AddItemToObject(o, "progress", report_progress_json(&p));

    if (g->is_template && monitor_next_fire_at(st, g, now, &next) != 0) {
        next = -1;
        err_clear();
    }
    if (next >= 0)
        cJSON_AddStringToObject(o, "next_fire_at", time_format_rfc3339(t, sizeof(t), next));
    else
        cJSON_AddNullToObject(o, "next_fire_at");
    return o;
}

int view_goal_status_matches(const struct goal *g, const char *want)
{
    /* "queued" leaves the templates out, "scheduled" keeps only them */
    return !want || strcmp(report_goal_status(g), want) == 0;
}

int view_goal_status_valid(const char *s)
{
    return strcmp(s, "scheduled") == 0 || transition_status_valid(ENTITY_GOAL, s);
}

const char *view_goal_status_stored(const char *want)
{
    return want && !strcmp(want, "scheduled") ? "queued" : want;
}
