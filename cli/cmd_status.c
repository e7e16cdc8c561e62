/* goald status [--json] : the daemon's heartbeat, lanes, queues, breakers. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/report.h"
#include "store/breaker.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/heartbeat.h"
#include "store/run.h"
#include "util/termesc.h"
#include "util/config.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* The daemon's heartbeat: running (fresh and its pid alive), stale, or
 * not running; and the lanes it last reported (NULL when none). */
static cJSON *daemon_state(store *st, int64_t now, cJSON **lanes)
{
    cJSON *d = cJSON_CreateObject();
    struct store_heartbeat hb;
    int rc = store_heartbeat_read(st, &hb);

    *lanes = NULL;
    if (rc == 0) {
        char t[TIME_RFC3339_MAX];
        int64_t age = now - hb.last_tick;
        int alive = age <= config_int(CFG_DAEMON_STALE_S) * 1000 && kill((pid_t)hb.pid, 0) == 0;
        cJSON_AddStringToObject(d, "state", alive ? "running" : "stale");
        cJSON_AddNumberToObject(d, "pid", (double)hb.pid);
        cJSON_AddStringToObject(d, "started_at", time_format_rfc3339_ms(t, sizeof(t), hb.started_at));
        cJSON_AddStringToObject(d, "last_tick", time_format_rfc3339_ms(t, sizeof(t), hb.last_tick));
        cJSON_AddNumberToObject(d, "tick_age_ms", (double)age);
        *lanes = cJSON_Parse(hb.lanes ? hb.lanes : "");
        store_heartbeat_release(&hb);
    } else if (rc == ERR_NOTFOUND) {
        cJSON_AddStringToObject(d, "state", "not running");
    }
    return d;
}

/* The queues, by the claim rule itself (store_run_queue_counts). */
static void add_queues(store *st, int64_t now, cJSON *o)
{
    struct store_run_queues qs;
    cJSON *q = cJSON_AddObjectToObject(o, "queues");

    if (store_run_queue_counts(st, now, &qs) != 0) {
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
    cJSON_AddNumberToObject(j, "age_s", (double)(jc->now - r->started_at) / 1000);
    cJSON_AddItemToArray(jc->jobs, j);
    return 0;
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
        struct report_activity a;
        if (report_activity(st, cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_id")), &a) !=
            0) {
            err_clear();
            continue;
        }
        cJSON_AddNumberToObject(it, "turn", a.turn);
        if (a.tool[0])
            cJSON_AddStringToObject(it, "last_tool", a.tool);
        else
            cJSON_AddNullToObject(it, "last_tool");
        cJSON_AddStringToObject(it, "last_tool_arg", a.tool_arg);
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
        cJSON_AddStringToObject(e, "message", a.last_error);
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

/* The status as JSON (cJSON_Delete() it). */
static cJSON *status_build(store *st, int64_t now)
{
    cJSON *o = cJSON_CreateObject(), *lanes, *br;
    int64_t open_esc = 0;

    xcheck(o);
    cJSON_AddItemToObject(o, "daemon", daemon_state(st, now, &lanes));
    add_queues(st, now, o);
    cJSON_AddItemToObject(o, "lanes", lanes ? lanes : cJSON_CreateObject());
    cJSON_AddItemToObject(o, "running", running_jobs(st, now));
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

/* Each running job: named by goal and item; then what it does (80
 * columns). */
static void print_jobs(const cJSON *jobs)
{
    const cJSON *it;

    printf("running    %d job%s\n", cJSON_GetArraySize(jobs),
           cJSON_GetArraySize(jobs) == 1 ? "" : "s");
    cJSON_ArrayForEach(it, jobs)
    {
        char l[1024];
        const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(it, "item_key"));
        const char *tool = cJSON_GetStringValue(cJSON_GetObjectItem(it, "last_tool"));
        snprintf(l, sizeof(l), "%s %s%s%s (goal %.8s), %.0f s",
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")), key, *key ? " of " : "",
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_title")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_id")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(it, "age_s")));
        printf("           %s\n", term_fit(l, 80 - 11));
        snprintf(l, sizeof(l), "turn %.0f%s%s%s%s",
                 cJSON_GetNumberValue(cJSON_GetObjectItem(it, "turn")), tool ? ", last " : "",
                 tool ? tool : "", tool ? ": " : "",
                 tool ? cJSON_GetStringValue(cJSON_GetObjectItem(it, "last_tool_arg")) : "");
        printf("             %s\n", term_fit(l, 80 - 13));
    }
}

/* The 80-column text form. */
static void status_print(const cJSON *o)
{
    const cJSON *d = cJSON_GetObjectItem(o, "daemon"), *q = cJSON_GetObjectItem(o, "queues");
    const cJSON *br = cJSON_GetObjectItem(o, "breakers"), *it;

    printf("daemon     %s", cJSON_GetStringValue(cJSON_GetObjectItem(d, "state")));
    if (cJSON_GetObjectItem(d, "pid"))
        printf(" (pid %.0f, last tick %s)", cJSON_GetNumberValue(cJSON_GetObjectItem(d, "pid")),
               cJSON_GetStringValue(cJSON_GetObjectItem(d, "last_tick")));
    printf("\nqueues     plan %.0f, work %.0f, waiting on dependencies %.0f\n",
           cJSON_GetNumberValue(cJSON_GetObjectItem(q, "plan")),
           cJSON_GetNumberValue(cJSON_GetObjectItem(q, "work")),
           cJSON_GetNumberValue(cJSON_GetObjectItem(q, "waiting_on_dependencies")));
    print_jobs(cJSON_GetObjectItem(o, "running"));
    printf("breakers   ");
    if (cJSON_GetArraySize(br) == 0)
        printf("all closed");
    cJSON_ArrayForEach(it, br) printf("%s %s  ",
                                      cJSON_GetStringValue(cJSON_GetObjectItem(it, "error_class")),
                                      cJSON_GetStringValue(cJSON_GetObjectItem(it, "state")));
    printf("\nescalations %.0f open\n",
           cJSON_GetNumberValue(cJSON_GetObjectItem(o, "open_escalations")));
    if (cJSON_IsObject(cJSON_GetObjectItem(o, "last_error"))) {
        const cJSON *e = cJSON_GetObjectItem(o, "last_error");
        char l[1024];
        snprintf(l, sizeof(l), "goal %.8s at %s",
                 cJSON_GetStringValue(cJSON_GetObjectItem(e, "goal_id")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(e, "time")));
        printf("last error %s\n           %s\n", l,
               term_fit(cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")), 80 - 11));
    }
}

static int run(struct cli_ctx *c)
{
    cJSON *o;
    store *st;
    const char *state;
    int rc, code;

    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    o = status_build(st, time_now_ms());
    if (cli_flag(c, "json"))
        cli_print_json(o);
    else
        status_print(o);
    /* like an init script's status: 3 when the daemon is not running */
    state = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "daemon"), "state"));
    code = state && !strcmp(state, "running") ? EXIT_OK : 3;
    cJSON_Delete(o);
    return code;
}

const struct cli_command cmd_status = {
    .name = "status",
    .args = "",
    .summary = "daemon heartbeat, running jobs and what they do, queues, last error",
    .details = "Each running job is named by its goal and item, with its turn and last\n"
               "tool call; the last failed run or tool call of any goal is shown.\n"
               "Exit 0 when the daemon is running, 3 when it is not (or stale),\n"
               "as an init script's status does; the output is printed either way.",
    .opts = (const struct cli_opt[]){{"json", NULL, "print JSON"}, {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "{\"daemon\": {\"state\": \"running|stale|not running\", \"pid\", \"started_at\", "
                  "\"last_tick\", \"tick_age_ms\"}, \"queues\": {\"plan\", \"work\", "
                  "\"waiting_on_dependencies\"}, \"lanes\": {...}, \"running\": [{\"run_id\", "
                  "\"goal_id\", \"goal_title\", \"item_id\", \"item_key\", \"kind\", \"lane\", \"pid\", "
                  "\"age_s\", \"turn\", \"last_tool\", \"last_tool_arg\"}], \"breakers\": "
                  "[{\"error_class\", \"state\", \"failures\"}], \"open_escalations\", "
                  "\"last_error\": {\"goal_id\", \"time\", \"message\"} or null}",
    .readonly = 1,
};
