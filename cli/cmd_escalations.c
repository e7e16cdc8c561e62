/* goald escalations [--all] [--json] / goald resolve ESC_ID --action A [--input TEXT] */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "lifecycle/resolve.h"
#include "util/termesc.h"
#include "util/timeutil.h"

static int list(struct cli_ctx *c)
{
    static const char q_open[] =
        "SELECT e.id, e.goal_id, ifnull(e.item_id, ''), e.type, e.severity, e.urgency, e.status,"
        " ifnull(e.resolution, ''), e.packet, e.created_at, g.title, ifnull(w.key, '')"
        " FROM escalations e JOIN goals g ON g.id = e.goal_id"
        " LEFT JOIN work_items w ON w.id = e.item_id WHERE e.status = 'open'"
        " ORDER BY e.created_at, e.id";
    static const char q_all[] =
        "SELECT e.id, e.goal_id, ifnull(e.item_id, ''), e.type, e.severity, e.urgency, e.status,"
        " ifnull(e.resolution, ''), e.packet, e.created_at, g.title, ifnull(w.key, '')"
        " FROM escalations e JOIN goals g ON g.id = e.goal_id"
        " LEFT JOIN work_items w ON w.id = e.item_id ORDER BY e.created_at, e.id";
    int json = cli_flag(c, "json");
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    sqlite3_stmt *s;
    store *st;
    int rc, n = 0;

    if ((rc = cli_store(c, &st)) != 0) {
        cJSON_Delete(arr);
        return rc;
    }
    if ((rc = store_prepare(st, &s, cli_flag(c, "all") ? q_all : q_open)) != 0) {
        cJSON_Delete(arr);
        return cli_fail_err(rc);
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *packet = cJSON_Parse((const char *)sqlite3_column_text(s, 8));
        char t[TIME_RFC3339_MAX];
        const char *q = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "minimal_question"));
        time_format_rfc3339_ms(t, sizeof(t), sqlite3_column_int64(s, 9));
        n++;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "id", (const char *)sqlite3_column_text(s, 0));
            cJSON_AddStringToObject(o, "goal_id", (const char *)sqlite3_column_text(s, 1));
            if (*sqlite3_column_text(s, 2))
                cJSON_AddStringToObject(o, "item_id", (const char *)sqlite3_column_text(s, 2));
            else
                cJSON_AddNullToObject(o, "item_id");
            cJSON_AddStringToObject(o, "type", (const char *)sqlite3_column_text(s, 3));
            cJSON_AddStringToObject(o, "severity", (const char *)sqlite3_column_text(s, 4));
            cJSON_AddStringToObject(o, "urgency", (const char *)sqlite3_column_text(s, 5));
            cJSON_AddStringToObject(o, "status", (const char *)sqlite3_column_text(s, 6));
            cJSON_AddStringToObject(o, "resolution", (const char *)sqlite3_column_text(s, 7));
            cJSON_AddStringToObject(o, "created_at", t);
            cJSON_AddItemToObject(o, "packet", packet ? packet : cJSON_CreateObject());
            cJSON_AddItemToArray(arr, o);
            continue;
        }
        /* titles, questions, resolutions: text of a model or a goal
         * (util/termesc.h); 80 columns, long texts cut with an ellipsis
         * (--json has them whole) */
        {
            char where[1024], acts[512] = "";
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(packet, "actions"), *it;
            size_t k = 0;
            snprintf(where, sizeof(where), "%s%s%s", (const char *)sqlite3_column_text(s, 10),
                     *sqlite3_column_text(s, 11) ? " / " : "",
                     (const char *)sqlite3_column_text(s, 11));
            printf("%.8s  %-18s %-8s %-6s goal %.8s %s\n", sqlite3_column_text(s, 0),
                   term_fit((const char *)sqlite3_column_text(s, 3), 18),
                   term_fit((const char *)sqlite3_column_text(s, 4), 8),
                   term_fit((const char *)sqlite3_column_text(s, 5), 6), sqlite3_column_text(s, 1),
                   term_fit(where, 80 - 59));
            if (q) {
                /* whole, wrapped: an agent's question is its own words */
                printf("          question:\n");
                term_wrap(stdout, q, 12, 80);
            }
            {
                /* an agent's question: what it is about and what it did last */
                const cJSON *wi = cJSON_GetObjectItemCaseSensitive(packet, "work_item");
                const cJSON *calls = cJSON_GetObjectItemCaseSensitive(packet, "last_tool_calls");
                const char *cause =
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "cause"));
                char line[1024];
                if (wi && calls) {
                    snprintf(line, sizeof(line), "%s: %s",
                             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wi, "key")),
                             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wi, "title")));
                    printf("          item %s\n", term_fit(line, 80 - 15));
                }
                cJSON_ArrayForEach(it, calls)
                {
                    snprintf(line, sizeof(line), "%s %s",
                             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "tool")),
                             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "args")));
                    printf("          called %s\n", term_fit(line, 80 - 17));
                }
                if (cause && (!q || !strstr(q, cause)))
                    printf("          cause: %s\n", term_fit(cause, 80 - 17));
            }
            cJSON_ArrayForEach(it, a)
            {
                int w = snprintf(acts + k, sizeof(acts) - k, " %s",
                                 cJSON_GetStringValue(it) ? cJSON_GetStringValue(it) : "");
                if (w < 0 || (size_t)w >= sizeof(acts) - k)
                    break;
                k += (size_t)w;
            }
            printf("          actions:%s\n", term_fit(acts, 80 - 18));
            if (*sqlite3_column_text(s, 7))
                printf("          resolution: %s\n",
                       term_fit((const char *)sqlite3_column_text(s, 7), 80 - 22));
        }
        cJSON_Delete(packet);
    }
    store_done(s);
    if (json) {
        cli_print_json(arr);
        cJSON_Delete(arr);
    } else if (n == 0) {
        printf("no %sescalations\n", cli_flag(c, "all") ? "" : "open ");
    }
    return EXIT_OK;
}

const struct cli_command cmd_escalations = {
    .name = "escalations",
    .args = "",
    .summary = "escalations waiting for a human, with their question and actions",
    .details = "--json prints each escalation with its whole packet: the work item, every "
               "attempt,\nthe current state, the analysis (root cause, options, one minimal "
               "question).",
    .opts = (const struct cli_opt[]){{"all", NULL, "resolved ones too"},
                                     {"json", NULL, "print a JSON array"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = list,
    .json_shape = "an array of {\"id\", \"goal_id\", \"item_id\", \"type\", \"severity\", "
                  "\"urgency\", \"status\", \"resolution\", \"created_at\", \"packet\"}",
    .readonly = 1,
};

static int resolve(struct cli_ctx *c)
{
    const char *action = cli_opt(c, "action");
    char id[ID_SIZE];
    struct resolve_result r;
    store *st;
    int rc;

    if (!action)
        return cli_fail(EXIT_USAGE, "resolve: --action is required (retry, skip, alternative, "
                                    "increase_budget, complete_partial, pause)");
    if ((rc = cli_resolve(c, "escalations", c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = lifecycle_resolve(st, id, action, cli_opt(c, "input"), &r)) != 0)
        return cli_fail(rc == ERR_INVALID ? EXIT_USAGE : EXIT_FAIL, "%s", err_last());
    printf("escalation %s: %s; goal %.8s is %s\n", id, action, r.goal_id, r.goal_status);
    daemon_wake(store_path(st));
    return EXIT_OK;
}

const struct cli_command cmd_resolve = {
    .name = "resolve",
    .args = "ESC_ID",
    .summary = "answer an escalation: retry, skip, alternative, increase_budget, "
               "complete_partial or pause",
    .details = "retry and alternative put --input into the next run's prompt (alternative as "
               "the strategy);\nincrease_budget takes --input like max_cost_usd=5,max_tokens="
               "1000000;\ncomplete_partial completes the goal with what is done; pause leaves it "
               "blocked.",
    .opts = (const struct cli_opt[]){{"action", "A", "what to do"},
                                     {"input", "TEXT", "the human's answer, hint or new limits"},
                                     {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = resolve,
};
