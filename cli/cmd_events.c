/* goald events [--goal ID] [--follow] [--json] : the event log. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/event.h"
#include "util/termesc.h"
#include "util/timeutil.h"

struct ev_ctx {
    int json;
    int follow;
    int first;
    int64_t last;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static cJSON *event_json(const struct store_event *ev)
{
    char t[TIME_RFC3339_MAX];
    cJSON *o = cJSON_CreateObject();
    cJSON *p = cJSON_Parse(ev->payload ? ev->payload : "{}");

    cJSON_AddNumberToObject(o, "seq", (double)ev->id);
    cJSON_AddStringToObject(o, "time", time_format_rfc3339_ms(t, sizeof(t), ev->ts));
    cJSON_AddStringToObject(o, "type", ev->type);
    if (ev->goal_id)
        cJSON_AddStringToObject(o, "goal_id", ev->goal_id);
    else
        cJSON_AddNullToObject(o, "goal_id");
    if (ev->item_id)
        cJSON_AddStringToObject(o, "item_id", ev->item_id);
    else
        cJSON_AddNullToObject(o, "item_id");
    if (ev->run_id)
        cJSON_AddStringToObject(o, "run_id", ev->run_id);
    else
        cJSON_AddNullToObject(o, "run_id");
    cJSON_AddItemToObject(o, "payload", p ? p : cJSON_CreateObject());
    return o;
}

static int each(const struct store_event *ev, void *vctx)
{
    struct ev_ctx *ec = vctx;
    char t[TIME_RFC3339_MAX];

    ec->last = ev->id;
    if (ec->json) {
        cJSON *o = event_json(ev);
        char *s = cJSON_PrintUnformatted(o);
        /* --json: an array; with --follow, one object per line */
        if (!ec->follow)
            fputs(ec->first ? "[\n  " : ",\n  ", stdout);
        fputs(s, stdout);
        if (ec->follow)
            fputc('\n', stdout);
        ec->first = 0;
        cJSON_free(s);
        cJSON_Delete(o);
        return 0;
    }
    printf("%6lld  %-24s  %-26s  goal=%.8s%s%.8s%s%.8s  %s\n", (long long)ev->id,
           time_format_rfc3339(t, sizeof(t), ev->ts), term_view(ev->type),
           ev->goal_id ? ev->goal_id : "-", ev->item_id ? " item=" : "",
           ev->item_id ? ev->item_id : "", ev->run_id ? " run=" : "", ev->run_id ? ev->run_id : "",
           term_view(ev->payload)); /* model text inside (DEL, C1): util/termesc.h */
    return 0;
}

static int run(struct cli_ctx *c)
{
    char idbuf[ID_SIZE];
    const char *goal = cli_opt(c, "goal");
    struct ev_ctx ec = {0};
    store *st;
    int rc;

    if (goal) {
        if ((rc = cli_resolve(c, "goals", goal, idbuf)) != 0)
            return rc;
        goal = idbuf;
    }
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    ec.json = cli_flag(c, "json");
    ec.follow = cli_flag(c, "follow");
    ec.first = 1;
    if ((rc = store_event_each(st, goal, 0, 0, each, &ec)) != 0)
        return cli_fail_err(rc);
    if (ec.json && !ec.follow)
        fputs(ec.first ? "[]\n" : "\n]\n", stdout);
    if (!ec.follow)
        return EXIT_OK;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    fflush(stdout);
    while (!stop) {
        time_sleep_ms(200);
        if ((rc = store_event_each(st, goal, ec.last, 1000, each, &ec)) != 0)
            return cli_fail_err(rc);
        fflush(stdout);
    }
    return EXIT_OK;
}

const struct cli_command cmd_events = {
    .name = "events",
    .args = "",
    .summary = "the event log, oldest first",
    .details = "--json prints a JSON array; with --follow, one JSON object per line.",
    .opts = (const struct cli_opt[]){{"goal", "ID", "only events of this goal"},
                                     {"follow", NULL, "keep printing new events until interrupted"},
                                     {"json", NULL, "print JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .readonly = 1,
};
