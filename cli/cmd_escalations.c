/* goald escalations [--all] [--json] / goald resolve ESC_ID --action A [--input TEXT] */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "lifecycle/views.h"
#include "lifecycle/resolve.h"
#include "store/escalation.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* An agent's question: what it is about and what it did last, and the
 * cause when the question does not already say it. */
static void print_context(const cJSON *packet, const char *q)
{
    const cJSON *wi = cJSON_GetObjectItemCaseSensitive(packet, "work_item");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(packet, "last_tool_calls"), *it;
    const char *cause = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "cause"));
    char line[1024];

    if (wi && calls) {
        snprintf(line, sizeof(line), "%s: %s", /* truncation: ok, a line shown */
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wi, "key")),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wi, "title")));
        printf("          item %s\n", term_fit(line, 80 - 15));
    }
    cJSON_ArrayForEach(it, calls)
    {
        snprintf(line, sizeof(line), "%s %s", /* truncation: ok, a line shown */
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "tool")),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "args")));
        printf("          called %s\n", term_fit(line, 80 - 17));
    }
    if (cause && (!q || !strstr(q, cause))) {
        printf("          cause:\n");
        term_wrap(stdout, cause, 12, 80);
    }
}

/* What the escalate stage made of it: the root cause (unless the question
 * or the cause already says it) and each option with its pros and cons,
 * wrapped whole. */
static void print_analysis(const cJSON *packet, const char *q)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(packet, "analysis"), *it;
    const char *cause = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "cause"));
    const char *root = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "root_cause"));
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(a, "options");

    if (root && *root && (!q || !strstr(q, root)) && (!cause || strcmp(cause, root) != 0)) {
        printf("          root cause:\n");
        term_wrap(stdout, root, 12, 80);
    }
    if (cJSON_GetArraySize(opts) > 0)
        printf("          options:\n");
    cJSON_ArrayForEach(it, opts)
    {
        static const char *const keys[] = {"description", "pros", "cons", "effort"};
        static const char *const labels[] = {"", "pros: ", "cons: ", "effort: "};
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "option"));
        char line[4096];

        printf("            %s\n", term_fit(name ? name : "?", 80 - 12));
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, keys[k]));
            if (!v || !*v)
                continue;
            snprintf(line, sizeof(line), "%s%s", labels[k], v); /* truncation: ok, a line shown */
            term_wrap(stdout, line, 14, 80);
        }
    }
}

/* The packet's actions, each after a space, as many as fit acts. */
static void actions_line(char *acts, size_t n, const cJSON *packet)
{
    const cJSON *it;
    size_t k = 0;

    acts[0] = '\0';
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(packet, "actions"))
    {
        int w = snprintf(acts + k, n - k, " %s",
                         cJSON_GetStringValue(it) ? cJSON_GetStringValue(it) : "");
        if (w < 0 || (size_t)w >= n - k)
            break;
        k += (size_t)w;
    }
}

/* Titles, questions, resolutions: text of a model or a goal
 * (util/termesc.h); 80 columns: what explains the problem (question,
 * cause, analysis) wrapped whole, the rest cut with an ellipsis (--json
 * has them whole). */
static void print_escalation(const struct store_escalation *e, const cJSON *packet)
{
    const char *q =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "minimal_question"));
    char where[1024], acts[512];

    /* truncation: ok, a place shown */
    snprintf(where, sizeof(where), "%s%s%s", e->goal_title, *e->item_key ? " / " : "", e->item_key);
    printf("%.8s  %-18s %-8s %-6s goal %.8s %s\n", e->id, term_fit(e->type, 18),
           term_fit(e->severity, 8), term_fit(e->urgency, 6), e->goal_id, term_fit(where, 80 - 59));
    if (q) {
        /* whole, wrapped: an agent's question is its own words */
        printf("          question:\n");
        term_wrap(stdout, q, 12, 80);
    }
    print_context(packet, q);
    print_analysis(packet, q);
    actions_line(acts, sizeof(acts), packet);
    printf("          actions:%s\n", term_fit(acts, 80 - 18));
    if (*e->resolution)
        printf("          resolution: %s\n", term_fit(e->resolution, 80 - 22));
}

static int list_cb(const struct store_escalation *e, void *ctx)
{
    struct cli_list *lc = ctx;
    cJSON *packet;

    lc->n++;
    if (lc->json) {
        cJSON_AddItemToArray(lc->arr, view_escalation(e));
        return 0;
    }
    packet = cJSON_Parse(e->packet);
    print_escalation(e, packet);
    cJSON_Delete(packet);
    return 0;
}

static int list_rows(struct cli_ctx *c, store *st, void *lc)
{
    return store_escalation_each_listed(st, cli_flag(c, "all"), list_cb, lc);
}

static int list(struct cli_ctx *c)
{
    struct cli_list lc;
    int rc = cli_list_run(&lc, c, list_rows, &lc);

    if (rc == EXIT_OK && !lc.json && lc.n == 0)
        printf("no %sescalations\n", cli_flag(c, "all") ? "" : "open ");
    return rc;
}

const struct cli_command cmd_escalations = {
    .name = "escalations",
    .args = "",
    .summary = "escalations waiting for a human, with their question and actions",
    .details = "Each shows its question, the item and the agent's last tool calls, the\n"
               "cause, and the escalate stage's analysis: the root cause and the options\n"
               "with their pros and cons.  --json prints each escalation with its whole\n"
               "packet: also every attempt and the current state.",
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
    if ((rc = cli_resolve(c, STORE_KIND_ESCALATION, c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = lifecycle_resolve(st, id, action, cli_opt(c, "input"), &r)) != 0)
        return cli_fail(rc == ERR_INVALID ? EXIT_USAGE : EXIT_FAIL, "%s", err_last());
    printf("escalation %s: %s; goal %.8s is %s\n", id, action, r.goal_id, r.goal_status);
    daemon_wake(st);
    return EXIT_OK;
}

const struct cli_command cmd_resolve = {
    .name = "resolve",
    .args = "ESC_ID",
    .summary = "answer an escalation: retry, skip, alternative, increase_budget, "
               "complete_partial, pause, accept_test_changes or accept_best_attempt",
    .details = "retry and alternative put --input into the next run's prompt (alternative as "
               "the strategy);\nincrease_budget takes --input like max_cost_usd=5,max_tokens="
               "1000000;\ncomplete_partial completes the goal with what is done; pause leaves it "
               "blocked;\naccept_test_changes (an item refused for changed tests) takes --input "
               "naming the\ntest cases whose change you accept (as the refusal names them);\n"
               "accept_best_attempt commits the item's best attempt (the packet's best_attempt:\n"
               "its gates passed, its test changes were refused) after verifying it again.",
    .opts = (const struct cli_opt[]){{"action", "A", "what to do"},
                                     {"input", "TEXT", "the human's answer, hint or new limits"},
                                     {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = resolve,
};
