/* goald cancel ID : cancel a goal and its open work items. */
#include <stdio.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "lifecycle/cancel.h"

static int run(struct cli_ctx *c)
{
    char id[ID_SIZE];
    store *st;
    int n = 0, jobs = 0;
    int rc;

    if ((rc = cli_resolve(c, STORE_KIND_GOAL, c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = lifecycle_goal_cancel(st, id, &n, &jobs)) != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    printf("cancelled goal %s (%d work item%s)\n", id, n, n == 1 ? "" : "s");
    if (jobs)
        printf("stopped %d running job%s\n", jobs, jobs == 1 ? "" : "s");
    daemon_wake(st); /* it reaps the stopped jobs at once */
    return EXIT_OK;
}

const struct cli_command cmd_cancel = {
    .name = "cancel",
    .args = "ID",
    .summary = "cancel a goal, its open work items and its running jobs",
    .details = "Running jobs of the goal get SIGTERM, then SIGKILL after daemon.kill_grace_s;\n"
               "their runs are recorded as aborted (reason cancelled).  When cancel returns,\n"
               "no job of the goal calls a model any more.",
    .opts = (const struct cli_opt[]){{NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
