/* goald cancel ID : cancel a goal and its open work items. */
#include <stdio.h>

#include "cli/cli.h"
#include "lifecycle/cancel.h"

static int run(struct cli_ctx *c)
{
    char id[ID_SIZE];
    store *st;
    int n = 0;
    int rc;

    if ((rc = cli_resolve(c, "goals", c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = lifecycle_goal_cancel(st, id, &n)) != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    printf("cancelled goal %s (%d work item%s)\n", id, n, n == 1 ? "" : "s");
    return EXIT_OK;
}

const struct cli_command cmd_cancel = {
    .name = "cancel",
    .args = "ID",
    .summary = "cancel a goal and its open work items",
    .opts = (const struct cli_opt[]){{NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
