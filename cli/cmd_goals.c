/* goald goals [--status S] [--json] : list goals. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/monitor.h"
#include "lifecycle/report.h"
#include "lifecycle/views.h"
#include "store/goal.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

struct list_ctx {
    struct cli_list l;
    store *st;
    const char *want; /* the status asked for (a shown one: "scheduled" too), or NULL */
    int64_t now;
};

/* The second line under a template or an instance: what it is, its
 * schedule and next fire time, or its template and outcome; cut at 80
 * columns. */
static void second_line(const struct goal *g, int64_t next)
{
    char line[512], t[TIME_RFC3339_MAX];
    int n;

    if (g->is_template) {
        n = snprintf(line, sizeof(line), "template: %s, next %s", g->schedule ? g->schedule : "",
                     next >= 0 ? time_format_rfc3339(t, sizeof(t), next - next % 1000) : "never");
    } else if (g->parent_id) {
        n = snprintf(line, sizeof(line), "instance of %.8s%s%s", g->parent_id,
                     g->outcome ? ", nothing to do: " : "",
                     g->outcome ? (g->outcome_reason ? g->outcome_reason : "") : "");
    } else if (g->outcome) {
        n = snprintf(line, sizeof(line), "nothing to do: %s",
                     g->outcome_reason ? g->outcome_reason : "");
    } else {
        return;
    }
    if (n < 0)
        return;
    /* 10 columns of indent + 70 of text, escaped first, cut with "..." */
    {
        const char *v = term_view(line);
        size_t len = strlen(v);
        if (utf8_count(v, len) <= 70)
            printf("          %s\n", v);
        else
            printf("          %.*s...\n", (int)utf8_offset(v, len, 67), v);
    }
}

static int each(const struct goal *g, void *vctx)
{
    struct list_ctx *lc = vctx;
    const char *shown = report_goal_status(g);
    char t[TIME_RFC3339_MAX];
    int64_t next = -1;

    if (!view_goal_status_matches(g, lc->want))
        return 0;
    lc->l.n++;
    if (lc->l.json) {
        cJSON_AddItemToArray(lc->l.arr, view_goal_listed(lc->st, g, lc->now));
        return 0;
    }
    if (g->is_template && monitor_next_fire_at(lc->st, g, lc->now, &next) != 0)
        next = -1;
    time_format_rfc3339(t, sizeof(t), g->created_at - g->created_at % 1000);
    /* 80 columns: the title gets the 32 the others leave (util/termesc.h) */
    printf("%-8.8s  %-9s  %3d  %-20s  %s\n", g->id, shown, g->priority, t, term_fit(g->title, 32));
    if (report_unverified_reason(g))
        printf("%-8s  %s\n", "", REPORT_NO_REPO);
    second_line(g, next);
    return 0;
}

static int rows(struct cli_ctx *c, store *st, void *vctx)
{
    struct list_ctx *lc = vctx;

    (void)c;
    lc->st = st;
    lc->now = time_now_ms();
    if (!lc->l.json)
        printf("%-8s  %-9s  %3s  %-20s  %s\n", "ID", "STATUS", "PRI", "CREATED", "TITLE");
    /* a template is stored queued and shown scheduled */
    return store_goal_each(st, view_goal_status_stored(lc->want), each, lc);
}

static int run(struct cli_ctx *c)
{
    const char *status = cli_opt(c, "status");
    struct list_ctx lc;

    if (status && !view_goal_status_valid(status))
        return cli_fail(EXIT_USAGE, "goals: --status: expected " VIEW_GOAL_STATUSES ", got \"%s\"",
                        status);
    lc.want = status;
    return cli_list_run(&lc.l, c, rows, &lc);
}

const struct cli_command cmd_goals = {
    .name = "goals",
    .args = "",
    .summary = "list goals, newest first",
    .details = "A recurring goal's template reads \"scheduled\", with its schedule and next\n"
               "fire time on the line below; an instance names its template there.",
    .opts = (const struct cli_opt[]){{"status", "S",
                                      "only goals in status S (scheduled: the templates)"},
                                     {"json", NULL, "print a JSON array of goal objects"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "an array of goal objects, newest first (the shape of `goal show "
                  "--json`)",
    .readonly = 1,
};
