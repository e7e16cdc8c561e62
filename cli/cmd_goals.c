/* goald goals [--status S] [--json] : list goals. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/report.h"
#include "lifecycle/transitions.h"
#include "store/goal.h"
#include "util/termesc.h"
#include "util/timeutil.h"

struct list_ctx {
    int json;
    cJSON *arr;
    int n;
};

static int each(const struct goal *g, void *vctx)
{
    struct list_ctx *lc = vctx;
    char t[TIME_RFC3339_MAX];

    lc->n++;
    if (lc->json) {
        cJSON_AddItemToArray(lc->arr, report_goal_json(g));
        return 0;
    }
    time_format_rfc3339(t, sizeof(t), g->created_at - g->created_at % 1000);
    /* 80 columns: the title gets the 32 the others leave (util/termesc.h) */
    printf("%-8.8s  %-9s  %3d  %-20s  %s\n", g->id, g->status, g->priority, t,
           term_fit(g->title, 32));
    if (report_unverified_reason(g))
        printf("%-8s  %s\n", "", REPORT_NO_REPO);
    return 0;
}

static int run(struct cli_ctx *c)
{
    const char *status = cli_opt(c, "status");
    struct list_ctx lc = {0};
    store *st;
    int rc;

    if (status && !transition_status_valid(ENTITY_GOAL, status))
        return cli_fail(EXIT_USAGE,
                        "goals: --status: expected queued, active, blocked, completed or "
                        "cancelled, got \"%s\"",
                        status);
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    lc.json = cli_flag(c, "json");
    if (lc.json)
        lc.arr = cJSON_CreateArray();
    else
        printf("%-8s  %-9s  %3s  %-20s  %s\n", "ID", "STATUS", "PRI", "CREATED", "TITLE");
    rc = store_goal_each(st, status, each, &lc);
    if (rc) {
        cJSON_Delete(lc.arr);
        return cli_fail_err(rc);
    }
    if (lc.json) {
        cli_print_json(lc.arr);
        cJSON_Delete(lc.arr);
    }
    return EXIT_OK;
}

const struct cli_command cmd_goals = {
    .name = "goals",
    .args = "",
    .summary = "list goals, newest first",
    .opts = (const struct cli_opt[]){{"status", "S", "only goals in status S"},
                                     {"json", NULL, "print a JSON array of goal objects"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "an array of goal objects, newest first (the shape of `goal show "
                  "--json`)",
    .readonly = 1,
};
