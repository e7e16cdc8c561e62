/* goald goal show ID [--json] : one goal. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/monitor.h"
#include "lifecycle/report.h"
#include "store/goal.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/utf8.h"

/* One field; long values wrap at 80 columns (the goal's text: util/termesc.h) */
static void line(const char *k, const char *v)
{
    const char *e;
    int first = 1;

    if (!v || !*v)
        return;
    e = term_view(v);
    while (*e || first) {
        /* 80 - 18 columns of value, whole characters */
        size_t i = utf8_offset(e, strlen(e), 80 - 18), cut = i;
        if (e[i]) /* break after the last space, when there is one */
            for (size_t j = i; j > 0; j--)
                if (e[j - 1] == ' ') {
                    cut = j;
                    break;
                }
        printf("%-17s %.*s\n", first ? k : "", (int)(cut - (cut > 0 && e[cut - 1] == ' ')), e);
        e += cut;
        first = 0;
    }
}

static int run(struct cli_ctx *c)
{
    char id[ID_SIZE];
    char t[TIME_RFC3339_MAX];
    char num[64];
    struct goal *g = NULL;
    int64_t next = -1;
    store *st;
    int rc;

    if ((rc = cli_resolve(c, STORE_KIND_GOAL, c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = store_goal_get(st, id, &g)) != 0)
        return cli_fail_err(rc);
    if (g->is_template && monitor_next_fire_at(st, g, time_now_ms(), &next) != 0)
        next = -1;
    if (cli_flag(c, "json")) {
        cJSON *o = report_goal_json(g);
        if (next >= 0)
            cJSON_AddStringToObject(o, "next_fire_at", time_format_rfc3339(t, sizeof(t), next));
        else
            cJSON_AddNullToObject(o, "next_fire_at");
        cli_print_json(o);
        cJSON_Delete(o);
        store_goal_free(g);
        return EXIT_OK;
    }
    line("id", g->id);
    line("title", g->title);
    line("status", report_goal_status(g));
    snprintf(num, sizeof(num), "%d", g->priority); /* truncation: ok, a number fits */
    line("priority", num);
    line("description", g->description);
    line("repo", g->repo ? g->repo : "none (" REPORT_NO_REPO ")");
    {
        struct report_progress pr;
        char bar[33], counts[160], both[200];
        if ((rc = report_progress(st, g->id, &pr)) != 0) {
            store_goal_free(g);
            return cli_fail_err(rc);
        }
        report_bar(bar, 32, &pr);
        report_counts(counts, sizeof(counts), &pr);
        /* truncation: ok, a bar shown */
        snprintf(both, sizeof(both), "[%s] %.1f%%", bar, pr.percent);
        line("progress", both);
        line("", counts);
    }
    line("base branch", g->base_branch);
    line("branch", g->branch);
    line("schedule", g->schedule);
    if (next >= 0)
        line("next fire", time_format_rfc3339(t, sizeof(t), next));
    line("template", g->parent_id); /* an instance's template */
    if (g->outcome && !strcmp(g->outcome, "nothing_to_do"))
        line("outcome", "nothing to do");
    line("outcome reason", g->outcome_reason);
    if (g->deadline_at >= 0)
        line("deadline", time_format_rfc3339(t, sizeof(t), g->deadline_at));
    line("success criteria", g->success_criteria);
    line("verification", g->verification);
    line("allowed actions", g->allowed_actions);
    line("publish", g->publish);
    line("blocked reason", g->blocked_reason);
    line("created", time_format_rfc3339(t, sizeof(t), g->created_at));
    line("updated", time_format_rfc3339(t, sizeof(t), g->updated_at));
    store_goal_free(g);
    return EXIT_OK;
}

const struct cli_command cmd_goal_show = {
    .name = "goal show",
    .args = "ID",
    .summary = "show one goal (ID: a unique prefix of 8 or more characters)",
    .opts = (const struct cli_opt[]){{"json", NULL, "print the goal object as JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
    .json_shape = "the goal object: {\"id\", \"title\", \"status\", \"branch\", \"partial\", "
                  "\"description\", \"priority\", \"repo\", \"base_branch\", \"parent_id\", "
                  "\"schedule\", \"template\", \"deadline\", \"success_criteria\", "
                  "\"verification\", \"allowed_actions\", \"publish\", \"blocked_reason\", "
                  "\"unverified_reason\" (\"no repository\" or null), \"created_at\", "
                  "\"updated_at\", \"started_at\", \"ended_at\"}; times are RFC 3339 or null",
    .readonly = 1,
};
