/* goald report ID [--json] [--item KEY] : progress, items, budget, escalations, artifacts. */
#include <stdio.h>

#include "cli/cli.h"
#include "lifecycle/report.h"

static int run(struct cli_ctx *c)
{
    char id[ID_SIZE];
    store *st;
    int rc;

    if ((rc = cli_resolve(c, STORE_KIND_GOAL, c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if (cli_opt(c, "item"))
        rc = report_write_item(st, id, cli_opt(c, "item"), cli_flag(c, "json"), stdout);
    else if (cli_flag(c, "json"))
        rc = report_write_json(st, id, stdout);
    else
        rc = report_write_text(st, id, stdout);
    if (rc)
        return cli_fail_err(rc);
    return EXIT_OK;
}

const struct cli_command cmd_report = {
    .name = "report",
    .args = "ID",
    .summary = "progress by effort points, items, budget, escalations, artifacts",
    .details = "Effort points: S=1, M=3, L=5, XL=8; done and skipped items count as "
               "finished.\nThe --json shape is documented in docs/report-json.md.",
    .opts = (const struct cli_opt[]){{"json", NULL, "print the report as JSON"},
                                     {"item", "KEY",
                                      "one work item: each gate's latest result, its failing "
                                      "test cases and the tail of its output"},
                                     {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
    .json_shape = "{\"goal\", \"progress\": {\"done_points\", \"total_points\", \"percent\", "
                  "\"items_total\", \"items_done\", \"items_skipped\", \"items_blocked\", "
                  "\"items_running\", \"items_cancelled\", \"skipped_points\", "
                  "\"blocked_points\"}, \"work_items\": [...], \"partial_failures\", "
                  "\"evidence\", \"budget\", \"escalations\", \"artifacts\"} as in "
                  "docs/report-json.md; with --item KEY one object {\"key\", \"id\", \"title\", "
                  "\"status\", \"baseline\", \"granularity\", \"introduced\", \"pre_existing\", "
                  "\"fixed\", \"gate_inputs_changed\", \"fail_to_pass\", \"not_exercising\", "
                  "\"accepted_test_changes\", \"tests_weakened\", \"roles\", \"gates\": [...]}",
    .readonly = 1,
};
