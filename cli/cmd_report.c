/* goald report ID [--json] : progress, items, budget, escalations, artifacts. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/report.h"

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void budget_line(const cJSON *b, const char *k, const char *label, const char *fmt)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, k);
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(o, "limit");
    char s[64], l[64];

    snprintf(s, sizeof(s), fmt, num(o, "spent"));
    if (cJSON_IsNumber(lim))
        snprintf(l, sizeof(l), fmt, lim->valuedouble);
    else
        snprintf(l, sizeof(l), "no limit");
    printf("  %-12s %s / %s\n", label, s, l);
}

static void print_text(const cJSON *r)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(r, "goal");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "progress");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(r, "work_items");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "budget");
    const cJSON *esc = cJSON_GetObjectItemCaseSensitive(r, "escalations");
    const cJSON *art = cJSON_GetObjectItemCaseSensitive(r, "artifacts");
    const cJSON *it;
    double pct = num(p, "percent");
    int bar = (int)(pct / 5.0 + 0.5);

    printf("goal     %s  %s\n", str(g, "id"), str(g, "title"));
    printf("status   %s%s\n", str(g, "status"),
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "partial")) ? " (partial)" : "");
    if (*str(g, "branch"))
        printf("branch   %s\n", str(g, "branch"));
    printf("progress [");
    for (int i = 0; i < 20; i++)
        putchar(i < bar ? '#' : '.');
    printf("] %.1f%%  %.0f of %.0f points, %.0f of %.0f items finished\n", pct,
           num(p, "done_points"), num(p, "total_points"),
           num(p, "items_done") + num(p, "items_skipped"), num(p, "items_total"));
    if (cJSON_GetArraySize(items) > 0) {
        printf("\n  %-8s  %-12s  %-6s  %-8s  %-10s  %s\n", "KEY", "STATUS", "EFFORT",
               "ATTEMPTS", "VERIFIED", "TITLE");
        cJSON_ArrayForEach(it, items)
        {
            const char *ver =
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "verified"))     ? "yes"
                : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "unverified")) ? "UNVERIFIED"
                                                                                   : "-";
            printf("  %-8s  %-12s  %-6s  %-8.0f  %-10s  %s\n", str(it, "key"),
                   str(it, "status"), str(it, "effort"), num(it, "attempts"), ver,
                   str(it, "title"));
        }
    }
    printf("\nbudget\n");
    budget_line(b, "tokens", "tokens", "%.0f");
    budget_line(b, "cost_usd", "cost (USD)", "%.4f");
    budget_line(b, "wall_seconds", "wall (s)", "%.0f");
    if (cJSON_GetArraySize(esc) > 0) {
        printf("\nopen escalations\n");
        cJSON_ArrayForEach(it, esc)
        {
            printf("  %.8s  %-10s %-8s %s\n", str(it, "id"), str(it, "type"),
                   str(it, "severity"), str(it, "question"));
        }
    }
    if (cJSON_GetArraySize(art) > 0) {
        printf("\nartifacts\n");
        cJSON_ArrayForEach(it, art)
        {
            const char *what = *str(it, "url")    ? str(it, "url")
                               : *str(it, "ref")  ? str(it, "ref")
                                                  : str(it, "path");
            printf("  %-14s %s %s\n", str(it, "type"), what, str(it, "hash"));
        }
    }
}

static int run(struct cli_ctx *c)
{
    char id[ID_SIZE];
    cJSON *r = NULL;
    store *st;
    int rc;

    if ((rc = cli_resolve(c, "goals", c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = report_build(st, id, &r)) != 0)
        return cli_fail_err(rc);
    if (cli_flag(c, "json")) {
        char *t = cJSON_PrintUnformatted(r);
        if (t) {
            fputs(t, stdout);
            fputc('\n', stdout);
            cJSON_free(t);
        }
    } else {
        print_text(r);
    }
    cJSON_Delete(r);
    return EXIT_OK;
}

const struct cli_command cmd_report = {
    .name = "report",
    .args = "ID",
    .summary = "progress by effort points, items, budget, escalations, artifacts",
    .details = "Effort points: S=1, M=3, L=5, XL=8; done and skipped items count as "
               "finished.\nThe --json shape is documented in docs/report-json.md.",
    .opts = (const struct cli_opt[]){{"json", NULL, "print the report as JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
