/* goald status [--json] : the daemon's heartbeat, lanes, queues, breakers. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/views.h"
#include "util/termesc.h"
#include "util/timeutil.h"

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
        snprintf(l, sizeof(l), "%s %s%s%s (goal %.8s), %.0f s", /* truncation: ok, a line shown */
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")), key, *key ? " of " : "",
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_title")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_id")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(it, "age_s")));
        printf("           %s\n", term_fit(l, 80 - 11));
        snprintf(l, sizeof(l), "turn %.0f%s%s%s%s", /* truncation: ok, a line shown */
                 cJSON_GetNumberValue(cJSON_GetObjectItem(it, "turn")), tool ? ", last " : "",
                 tool ? tool : "", tool ? ": " : "",
                 tool ? cJSON_GetStringValue(cJSON_GetObjectItem(it, "last_tool_arg")) : "");
        printf("             %s\n", term_fit(l, 80 - 13));
    }
}

/* Each node sharing the queue: its id, state and lanes (80 columns). */
static void print_nodes(const cJSON *nodes)
{
    const cJSON *it;

    printf("nodes      %d\n", cJSON_GetArraySize(nodes));
    cJSON_ArrayForEach(it, nodes)
    {
        const cJSON *lanes = cJSON_GetObjectItem(it, "lanes");
        const cJSON *pl = cJSON_GetObjectItem(lanes, "plan"),
                    *wl = cJSON_GetObjectItem(lanes, "work");
        char l[1024];
        /* truncation: ok, a line shown */
        snprintf(l, sizeof(l), "%s %s, plan %.0f/%.0f, work %.0f/%.0f",
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "node_id")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(it, "state")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(pl, "running")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(pl, "cap")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(wl, "running")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(wl, "cap")));
        printf("           %s\n", term_fit(l, 80 - 11));
    }
}

/* The 80-column text form (the nodes when several share the queue, or
 * with_nodes). */
static void status_print(const cJSON *o, int with_nodes)
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
    if (with_nodes || cJSON_GetArraySize(cJSON_GetObjectItem(o, "nodes")) > 1)
        print_nodes(cJSON_GetObjectItem(o, "nodes"));
    print_jobs(cJSON_GetObjectItem(o, "running"));
    printf("breakers   ");
    if (cJSON_GetArraySize(br) == 0)
        printf("all closed");
    cJSON_ArrayForEach(it, br)
        printf("%s %s  ", cJSON_GetStringValue(cJSON_GetObjectItem(it, "error_class")),
               cJSON_GetStringValue(cJSON_GetObjectItem(it, "state")));
    printf("\nescalations %.0f open\n",
           cJSON_GetNumberValue(cJSON_GetObjectItem(o, "open_escalations")));
    if (cJSON_IsObject(cJSON_GetObjectItem(o, "last_error"))) {
        const cJSON *e = cJSON_GetObjectItem(o, "last_error");
        char l[1024];
        snprintf(l, sizeof(l), "goal %.8s at %s", /* truncation: ok, a line shown */
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
    o = view_status(st, time_now_ms());
    if (cli_flag(c, "json"))
        cli_print_json(o);
    else
        status_print(o, store_is_url(store_path(st)));
    /* like an init script's status: 3 when the daemon is not running */
    state = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "daemon"), "state"));
    code = state && !strcmp(state, "running") ? EXIT_OK : 3;
    cJSON_Delete(o);
    return code;
}

const struct cli_command cmd_status = {
    .name = "status",
    .args = "",
    .summary = "daemon heartbeat, nodes, running jobs and what they do, queues, last error",
    .details = "Each running job is named by its goal and item, with its turn and last\n"
               "tool call; the last failed run or tool call of any goal is shown.\n"
               "With several daemons sharing a PostgreSQL queue, each node is listed\n"
               "with its lanes, and each job names its node; \"daemon\" is this\n"
               "node's (node.id).\n"
               "The queues count what the daemon could claim now, by the claim rule\n"
               "itself: a retry not yet due, or a goal with a job running, is not\n"
               "counted (the work queue counts items and publish units).\n"
               "Exit 0 when the daemon is running, 3 when it is not (or stale),\n"
               "as an init script's status does; the output is printed either way.",
    .opts = (const struct cli_opt[]){{"json", NULL, "print JSON"}, {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape =
        "{\"daemon\": {\"state\": \"running|stale|not running\", \"node_id\", \"host\", \"pid\", "
        "\"started_at\", \"last_tick\", \"tick_age_ms\"}, \"queues\": {\"plan\", \"work\", "
        "\"waiting_on_dependencies\"}, \"lanes\": {...}, \"running\": [{\"run_id\", "
        "\"goal_id\", \"goal_title\", \"item_id\", \"item_key\", \"kind\", \"lane\", \"pid\", "
        "\"node_id\", \"age_s\", \"turn\", \"last_tool\", \"last_tool_arg\"}], \"nodes\": "
        "[{\"node_id\", \"host\", \"state\", \"pid\", \"started_at\", \"last_tick\", "
        "\"tick_age_ms\", \"lanes\"}], \"breakers\": "
        "[{\"error_class\", \"state\", \"failures\"}], \"open_escalations\", "
        "\"last_error\": {\"goal_id\", \"time\", \"message\"} or null}",
    .readonly = 1,
};
